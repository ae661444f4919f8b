"""Expected exposure, the group-exposure fairness of the TREC Fair Ranking Track 2022 Task 2
(Ekstrand et al.), SPEC §4.6.

Alignments are tidy frames `doc_id, group, weight` (one distribution over groups per
document; "Unknown" is a real group; `pipeline.metrics.inputs.intersect` combines several
dimensions into their outer product). Discount `d(r) = 1 / log2(max(r, 2))`
(`pipeline.metrics.ties.fair_discount`). AWRF (Task 1) is `pipeline.metrics.awrf`.

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

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.inputs import EvalInputs, finish, one_hot, query_frame, require
from pipeline.metrics.ties import fair_discount

log = logging.getLogger(__name__)

N_SAMPLES, LENGTH, TEMPERATURE, SEED = 100, 20, 1.0, 0
NO_RELEVANT = "ee_no_relevant"


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
        raise InputError(
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
    weights = np.broadcast_to(fair_discount(np.arange(1, rankings.shape[1] + 1)), rankings.shape)
    return np.bincount(rankings.ravel(), weights=weights.ravel(), minlength=n_docs) / len(rankings)


def ideal_exposure(grades: np.ndarray, length: int) -> np.ndarray:
    """Expected exposure under the ideal policy: grade descending, ties shuffled uniformly,
    so each tie block gets the mean discount of its positions (positions > length: 0)."""
    order = np.argsort(-grades, kind="stable")
    positions = np.arange(1, grades.size + 1)
    disc = np.where(positions <= length, fair_discount(positions), 0.0)
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
    `ctx.exposure_temperature` on the standardised scores) of the run, with the evaluation's
    alignments (else `doc_groups` as one-hot alignments) for EUE when present. The cut-offs
    do not apply (L is the ranking length)."""
    qrels = require(ctx, "qrels", "exposure")
    align = ctx.alignments
    if align is None and ctx.doc_groups is not None:
        align = one_hot(ctx.doc_groups)
    values = expected_exposure(ctx.run, qrels, align, temperature=ctx.exposure_temperature)
    out = finish(query_frame(ctx.run), values, [NO_RELEVANT])
    n = int(out[NO_RELEVANT].sum())
    if n:
        log.warning("exposure: %d queries have no relevant document; target = all ties", n)
    return out


RECORD = Metric(
    "exposure",
    exposure,
    (
        Measure(f"EE-L@{LENGTH}", "↓", "expected exposure loss ‖s − t‖² (system vs target)",
                lo=0.0),
        Measure(f"EE-D@{LENGTH}", "↓", "expected exposure disparity s·s", lo=0.0),
        Measure(f"EE-R@{LENGTH}", "↑", "expected exposure relevance s·t", lo=0.0,
                fairness=False),
        Measure(f"EUE@{LENGTH}", "↓", "expected group under-exposure ‖Aᵀ max(t̂ − ŝ, 0)‖²",
                lo=0.0),
    ),
    reference="Diaz et al., CIKM 2020 (expected exposure); TREC Fair Ranking 2022 Task 2",
    order=70,
)  # fmt: skip
