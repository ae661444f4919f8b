"""Expected exposure, the group-exposure fairness of the TREC Fair Ranking Track 2022 Task 2
(Ekstrand et al.), SPEC §4.6.

Alignments are tidy frames `doc_id, group, weight` (one distribution over groups per
document; "Unknown" is a real group; `pipeline.metrics.inputs.intersect` combines several
dimensions into their outer product). Discount `d(r) = 1 / log2(max(r, 2))`
(`pipeline.ties.fair_discount`). AWRF (Task 1) is `pipeline.metrics.awrf`. The formulas
(EE-L/D/R, EUE, the policy) are `pipeline.metrics._fairness`, shared with the track's variant.

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
from dataclasses import dataclass
from typing import Annotated

import numpy as np
import polars as pl

from pipeline.config import Checked, Range
from pipeline.metrics import trec_fair2022 as track
from pipeline.metrics._fairness import exposure_scores, plackett_luce, standardise
from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.inputs import EvalInputs, finish, one_hot, query_frame, require
from pipeline.ties import fair_discount

log = logging.getLogger(__name__)

N_SAMPLES, LENGTH, TEMPERATURE, SEED = 100, 20, 1.0, 0
NO_RELEVANT = "ee_no_relevant"


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


@dataclass(frozen=True)
class ExposureConfig(Checked):
    """The ``evaluate.exposure`` section: ``temperature`` (> 0) of the Plackett-Luce policy on
    the per-query standardised scores (SPEC §4.6 "Score scale"); ``trec_fair_2022``: also the
    track's own Task 2 metrics (``trecfair.EE-L`` …, ``pipeline.metrics.trec_fair2022``):
    ``auto`` where the alignments carry the track's fairness dimensions, or ``on``/``off``."""

    temperature: Annotated[float, Range(gt=0)] = TEMPERATURE
    trec_fair_2022: track.Mode = "auto"


DEFAULT = ExposureConfig()


def exposure(
    ctx: EvalInputs, cutoffs: tuple[int, ...], cfg: ExposureConfig = DEFAULT
) -> pl.DataFrame:
    """Metric family `exposure`: expected exposure (N = 100, L = 20, seed 0, temperature
    `cfg.temperature` on the standardised scores) of the run, with the evaluation's
    alignments (else `doc_groups` as one-hot alignments) for EUE when present; with the TREC
    Fair 2022 variant, the track's Task 2 metrics too. The cut-offs do not apply (L is the
    ranking length)."""
    qrels = require(ctx, "qrels", "exposure")
    align = ctx.alignments
    if align is None and ctx.doc_groups is not None:
        align = one_hot(ctx.doc_groups)
    values = expected_exposure(ctx.run, qrels, align, temperature=cfg.temperature)
    out = finish(query_frame(ctx.run), values, [NO_RELEVANT])
    n = int(out[NO_RELEVANT].sum())
    if n:
        log.warning("exposure: %d queries have no relevant document; target = all ties", n)
    if track.applies(cfg.trec_fair_2022, ctx.dimensions):
        task2 = track.task2_metrics(ctx.run, qrels, ctx.dimensions, temperature=cfg.temperature)
        out = out.join(task2, on="query_id", how="left", maintain_order="left")
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
        *track.TASK2_MEASURES,
    ),
    reference="Diaz et al., CIKM 2020 (expected exposure); TREC Fair Ranking 2022 Task 2",
    order=70,
    config=ExposureConfig,
)  # fmt: skip
