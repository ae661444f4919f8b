"""Group-exposure fairness of the TREC Fair Ranking Track 2022 (Ekstrand et al.), SPEC §4.6.

Alignments are tidy frames `doc_id, group, weight` (one distribution over groups per
document; "Unknown" is a real group). Several dimensions `doc_id, dimension, group, weight`
combine by `intersect` into their outer product (group `dim1=g1|dim2=g2`, weight = product).
Discount `d(r) = 1 / log2(max(r, 2))`.

- `awrf_alignments`: AWRF@k = 1 − JSD(run, target) (Sapiezynski et al. 2019) with soft,
  multi-dimensional alignments; the run distribution is the discount-weighted mean of the
  aligned top-k documents' vectors (unaligned ones dropped; tied documents share the mean
  discount of their tie block's positions, `pipeline.metrics.ties`, SPEC §1 "Ties"); the
  target is uniform over the groups of the alignment table, or ("relevant") the mean vector
  of the query's aligned relevant documents mixed 50/50 with the background (by default the
  mean vector of every aligned document). With qrels, `nDCGxAWRF@k` = nDCG@k × AWRF@k as in
  Task 1.
- `expected_exposure` (Diaz et al., CIKM 2020, "Evaluating stochastic rankings with expected
  exposure"; Task 2): a Plackett-Luce policy over the run scores emits N rankings of length L
  (sampled with the Gumbel top-L trick, seeded per query). The scores are first standardised
  per query (z-score over the query's run documents, all zeros when they are all equal;
  SPEC §4.6 "Score scale"), so the policy `exp(z / temperature)` does not depend on the
  score scale: any map `a·s + b` with a > 0 gives the same rankings. The documents are
  indexed in `doc_id` order, so the sampled noise does not depend on how tied documents
  were ordered in the run. The system exposure `s` of a document is the mean discount at its
  ranks (0 when not shown). The
  target `t` comes from the ideal policy that ranks by relevance grade and shuffles ties; we
  use its exact expectation, the mean discount over each tie block's positions (no
  sampling). Universe: the run's documents plus the query's relevant documents missing from
  the run (`s` = 0 for them). Reported: `EE-L = ‖s − t‖²`, `EE-D = s·s`, `EE-R = s·t` and the
  expected under-exposure `EUE = ‖Aᵀ max(t̂ − ŝ, 0)‖²` with `ŝ, t̂` normalised to sum 1 and
  `A` the documents' alignment matrix.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence

import numpy as np
import polars as pl

from pipeline.metrics.awrf import one_minus_jsd
from pipeline.metrics.effectiveness import ndcg_per_query
from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require
from pipeline.metrics.ties import BLOCK, cut, fair_discount, tie_averaged

log = logging.getLogger(__name__)

UNKNOWN = "Unknown"
N_SAMPLES, LENGTH, TEMPERATURE, SEED = 100, 20, 1.0, 0
NO_RELEVANT = "ee_no_relevant"


def discount(ranks: np.ndarray) -> np.ndarray:
    """`1 / log2(max(r, 2))` for 1-based ranks."""
    return 1.0 / np.log2(np.maximum(ranks, 2))


def intersect(alignments: pl.DataFrame, dimensions: Sequence[str] | None = None) -> pl.DataFrame:
    """Outer product of per-dimension alignments `doc_id, dimension, group, weight` →
    `doc_id, group, weight`; a document lacking one of the dimensions is dropped (logged)."""
    dims = list(dimensions) if dimensions else sorted(alignments["dimension"].unique().to_list())
    out: pl.DataFrame | None = None
    for dim in dims:
        part = alignments.filter(pl.col("dimension") == dim).select(
            "doc_id", (pl.lit(f"{dim}=") + pl.col("group")).alias("group"), "weight"
        )
        if out is None:
            out = part
            continue
        out = out.join(part, on="doc_id", suffix="_r").select(
            "doc_id",
            (pl.col("group") + "|" + pl.col("group_r")).alias("group"),
            pl.col("weight") * pl.col("weight_r"),
        )
    if out is None:
        raise ValueError(
            f"intersect: no dimension given or found; got columns {alignments.columns}"
        )
    dropped = alignments["doc_id"].n_unique() - out["doc_id"].n_unique()
    if dropped:
        log.warning("intersect: %d documents lack one of the dimensions %s; dropped", dropped, dims)
    return out.sort("doc_id", "group")


def one_hot(doc_groups: pl.DataFrame) -> pl.DataFrame:
    """`doc_id, group` labels as alignments `doc_id, group, weight = 1`."""
    return doc_groups.select("doc_id", "group", pl.lit(1.0).alias("weight"))


def awrf_alignments(
    run: pl.DataFrame,
    alignments: pl.DataFrame,
    cutoffs: Sequence[int],
    target: str = "uniform",
    qrels: pl.DataFrame | None = None,
    background: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per-query `AWRF@k` (+ `nDCGxAWRF@k` with qrels, `awrf_skipped@k` counts)."""
    base = query_frame(run)
    weights = {f"_w{k}": cut(k, fair_discount) for k in cutoffs}
    # tie-averaged discounts; sorted so the float sums below add in one fixed order that does
    # not depend on the order of tied documents (bit-identical reruns)
    ranked = tie_averaged(run, weights, max(cutoffs)).join(alignments, on="doc_id")
    ranked = ranked.sort("query_id", BLOCK, "doc_id", "group")
    goal = _awrf_target(base, alignments, target, qrels, background)
    out = base
    for k in cutoffs:
        mass = (
            ranked.filter(pl.col(f"_w{k}") > 0)
            .group_by("query_id", "group", maintain_order=True)
            .agg((pl.col(f"_w{k}") * pl.col("weight")).sum().alias("_w"))
        )
        dist = mass.select(
            "query_id", "group", (pl.col("_w") / pl.col("_w").sum().over("query_id")).alias("p")
        )
        out = out.join(one_minus_jsd(dist, goal, f"AWRF@{k}"), on="query_id", how="left")
    if qrels is not None:
        out = out.join(ndcg_per_query(run, qrels, cutoffs), on="query_id", how="left")
        out = out.with_columns(
            (pl.col(f"nDCG@{k}") * pl.col(f"AWRF@{k}")).alias(f"nDCGxAWRF@{k}") for k in cutoffs
        ).drop(f"nDCG@{k}" for k in cutoffs)
    flags = [
        pl.col(f"AWRF@{k}").is_null().cast(pl.Int64).alias(f"awrf_skipped@{k}") for k in cutoffs
    ]
    return out.sort("query_id").with_columns(flags)


def _awrf_target(
    base: pl.DataFrame,
    alignments: pl.DataFrame,
    target: str,
    qrels: pl.DataFrame | None,
    background: pl.DataFrame | None,
) -> pl.DataFrame:
    """`query_id, group, q` over every group of the alignment table."""
    groups = alignments.select("group").unique().sort("group")
    if target == "uniform":
        return base.join(groups, how="cross").with_columns(q=pl.lit(1.0 / groups.height))
    if target != "relevant" or qrels is None:
        raise ValueError(
            f"AWRF target must be 'uniform' or 'relevant' (with qrels), got {target!r} "
            f"with qrels {'present' if qrels is not None else 'None'}"
        )
    n_docs = alignments["doc_id"].n_unique()
    bg = (
        background
        if background is not None
        else alignments.group_by("group", maintain_order=True).agg(
            (pl.col("weight").sum() / n_docs).alias("weight")
        )
    )
    rel = qrels.filter(pl.col("relevance") > 0).join(alignments, on="doc_id")
    rel = rel.sort("query_id", "doc_id", "group")
    rel = rel.group_by("query_id", "group", maintain_order=True).agg(
        pl.col("weight").sum().alias("_r")
    )
    rel = rel.with_columns(pl.col("_r") / pl.col("_r").sum().over("query_id"))
    grid = base.join(groups, how="cross").join(bg.rename({"weight": "_bg"}), on="group", how="left")
    grid = grid.join(rel, on=["query_id", "group"], how="left").with_columns(
        pl.col("_bg").fill_null(0.0), pl.col("_r").is_null().all().over("query_id").alias("_fb")
    )
    q = (
        pl.when(pl.col("_fb"))
        .then(pl.col("_bg"))
        .otherwise(0.5 * pl.col("_r").fill_null(0.0) + 0.5 * pl.col("_bg"))
    )
    return grid.select("query_id", "group", q.alias("q"))


def standardise(scores: np.ndarray) -> np.ndarray:
    """Per-query z-score `(s − mean) / std` (population std); all zeros when every score is
    equal (SPEC §4.6 "Score scale": Plackett-Luce then ignores the score scale)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0 or np.all(scores == scores[0]):
        return np.zeros(scores.size)
    centred = scores - scores.mean()
    std = float(np.sqrt(np.mean(centred**2)))
    if std == 0.0:  # distinct scores whose spread underflows: treat them as all equal
        return np.zeros(scores.size)
    return centred / std


def plackett_luce(
    scores: np.ndarray, n_samples: int, length: int, temperature: float, rng: np.random.Generator
) -> np.ndarray:
    """`(n_samples, min(length, n))` document indices: Plackett-Luce rankings with item
    probabilities ∝ exp(score / temperature), via Gumbel top-L (vectorised, no Python loop)."""
    if temperature <= 0 or n_samples < 1 or length < 1:
        raise ValueError(
            f"Plackett-Luce needs temperature > 0, n_samples >= 1, length >= 1; got "
            f"{temperature}, {n_samples}, {length}"
        )
    keys = scores[None, :] / temperature + rng.gumbel(size=(n_samples, scores.size))
    width = min(length, scores.size)
    top = np.argpartition(-keys, width - 1, axis=1)[:, :width]
    order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def system_exposure(rankings: np.ndarray, n_docs: int) -> np.ndarray:
    """Mean discount of each document over the rankings (0 where never shown)."""
    weights = np.broadcast_to(discount(np.arange(1, rankings.shape[1] + 1)), rankings.shape)
    return np.bincount(rankings.ravel(), weights=weights.ravel(), minlength=n_docs) / len(rankings)


def ideal_exposure(grades: np.ndarray, length: int) -> np.ndarray:
    """Expected exposure under the ideal policy: grade descending, ties shuffled uniformly,
    so each tie block gets the mean discount of its positions (positions > length: 0)."""
    order = np.argsort(-grades, kind="stable")
    positions = np.arange(1, grades.size + 1)
    disc = np.where(positions <= length, discount(positions), 0.0)
    out = np.empty(grades.size)
    sorted_grades = grades[order]
    for g in np.unique(grades):
        block = sorted_grades == g
        out[order[block]] = disc[block].mean()
    return out


def exposure_scores(s: np.ndarray, t: np.ndarray, align: np.ndarray | None) -> dict[str, float]:
    """EE-L, EE-D, EE-R and (with an alignment matrix `docs × groups`) EUE."""
    out = {"EE-L": float(np.sum((s - t) ** 2)), "EE-D": float(s @ s), "EE-R": float(s @ t)}
    if align is not None:
        under = np.maximum(t / t.sum() - s / s.sum(), 0.0)
        out["EUE"] = float(np.sum((align.T @ under) ** 2))
    return out


def expected_exposure(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    alignments: pl.DataFrame | None = None,
    n_samples: int = N_SAMPLES,
    length: int = LENGTH,
    temperature: float = TEMPERATURE,
    seed: int = SEED,
) -> pl.DataFrame:
    """Per-query `EE-L@L, EE-D@L, EE-R@L` (+ `EUE@L` with alignments) and `ee_no_relevant`.

    The policy samples from `exp(z / temperature)` with `z` the query's standardised scores.
    """
    groups = alignments["group"].unique().sort().to_list() if alignments is not None else []
    vectors = _vectors(alignments, groups) if alignments is not None else None
    relevant = qrels.filter(pl.col("relevance") > 0)
    by_query = {k[0]: v for k, v in relevant.partition_by("query_id", as_dict=True).items()}
    rows = []
    # doc_id order within a query: the Gumbel noise each document draws ignores its run rank
    for (qid,), part in run.sort("query_id", "doc_id").group_by("query_id", maintain_order=True):
        rel = by_query.get(qid, relevant.head(0))
        extra = sorted(
            rel.filter(~pl.col("doc_id").is_in(part["doc_id"].implode()))["doc_id"].to_list()
        )
        doc_ids = [*part["doc_id"].to_list(), *extra]
        grades = dict(zip(rel["doc_id"].to_list(), rel["relevance"].to_list(), strict=True))
        rng = np.random.default_rng([seed, zlib.crc32(str(qid).encode())])
        z = standardise(part["score"].to_numpy())
        ranks = plackett_luce(z, n_samples, length, temperature, rng)
        s = system_exposure(ranks, len(doc_ids))
        t = ideal_exposure(np.array([grades.get(d, 0) for d in doc_ids], dtype=float), length)
        align = None if vectors is None else _matrix(vectors, doc_ids, len(groups))
        values = exposure_scores(s, t, align)
        rows.append(
            {
                "query_id": qid,
                **{f"{k}@{length}": v for k, v in values.items()},
                NO_RELEVANT: int(rel.height == 0),
            }
        )
    return pl.DataFrame(rows).with_columns(pl.col(NO_RELEVANT).cast(pl.Int64)).sort("query_id")


Vectors = dict[str, tuple[np.ndarray, np.ndarray]]


def _vectors(alignments: pl.DataFrame, groups: list[str]) -> Vectors:
    """doc_id → (group indices, weights), built once for every query."""
    coded = alignments.with_columns(
        pl.col("group").replace_strict(groups, list(range(len(groups)))).alias("_g")
    )
    per_doc = coded.group_by("doc_id", maintain_order=True).agg("_g", "weight")
    return {d: (np.asarray(g), np.asarray(w)) for d, g, w in per_doc.iter_rows()}


def _matrix(vectors: Vectors, doc_ids: list[str], n_groups: int) -> np.ndarray:
    """Dense `docs × groups` alignment matrix; unaligned documents are zero rows."""
    out = np.zeros((len(doc_ids), n_groups))
    for i, doc_id in enumerate(doc_ids):
        if doc_id in vectors:
            cols, weights = vectors[doc_id]
            out[i, cols] = weights
    return out


def exposure(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Metric family `exposure`: expected exposure (N = 100, L = 20, seed 0, temperature
    `ctx.exposure_temperature` on the standardised scores) of the run, with `doc_groups` as
    one-hot alignments for EUE when present. The cut-offs do not apply (L is the ranking
    length)."""
    qrels = require(ctx, "qrels", "exposure")
    align = one_hot(ctx.doc_groups) if ctx.doc_groups is not None else None
    values = expected_exposure(ctx.run, qrels, align, temperature=ctx.exposure_temperature)
    out = finish(query_frame(ctx.run), values, [NO_RELEVANT])
    n = int(out[NO_RELEVANT].sum())
    if n:
        log.warning("exposure: %d queries have no relevant document; target = all ties", n)
    return out
