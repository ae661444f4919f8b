"""AWRF: attention-weighted rank fairness (Sapiezynski et al., "Quantifying the impact of user
attention on fair group representation in ranked lists", WWW 2019 companion), as used by the
TREC Fair Ranking Track 2022 Task 1 (Ekstrand et al.), SPEC §4.6. The one AWRF of the suite.

Documents carry group alignments `doc_id, group, weight`: one distribution over groups per
document, `pipeline.metrics.inputs.EvalInputs.alignments` (TREC Fair 2022: the
intersectional outer product of its dimensions, `intersect`) or, without them, the
one-hot F/M/N label of `doc_groups` (Grep-BiasIR). Documents without an alignment are
dropped (counted per query in `awrf_ungrouped_docs`, among the documents with a non-zero
weight at max(k)). With the discount `d(r) = 1 / log2(max(r, 2))` at the document's run rank
r (0 past k), tie-averaged: tied documents (equal scores) share the mean discount of the
positions their block occupies (`pipeline.ties`, SPEC §1 "Ties"), so the run's
exposure vector is its expectation over the orders of each tie block:

- run distribution `p` = discount-weighted mean of the alignment vectors of the top k;
- target `q` = uniform over the groups of the alignments (`evaluate.awrf.target:
  uniform`), or (`relevant`) the mean alignment of the query's relevant documents (qrel >
  0) mixed 50/50 with the background, the mean alignment of every aligned document; a query
  without any aligned relevant document falls back to the background alone
  (`awrf_target_fallback`);
- `AWRF@k = 1 − JSD(p, q)`, `JSD = ½ KL(p‖m) + ½ KL(q‖m)`, `m = (p + q) / 2`, natural log, so
  AWRF ∈ [1 − ln 2, 1].

A query with no aligned document of non-zero weight in its top k gets null and
`awrf_skipped@k` = 1. With qrels, `nDCGxAWRF@k` is the per-query product nDCG@k × AWRF@k (the
track's Task 1 score; nDCG keeps the run's order, see `pipeline.metrics.effectiveness`).
The TREC Fair 2022 variant (`evaluate.awrf.trec_fair_2022`, `pipeline.metrics.trec_fair2022`)
computes the track's own inputs to the same `1 − JSD` (`pipeline.metrics._fairness`) as the
track's code does (its float32 discount, its known-page rules, its background targets).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from pipeline.config import Checked
from pipeline.errors import InputError
from pipeline.metrics import trec_fair2022 as track
from pipeline.metrics._fairness import one_minus_jsd
from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.effectiveness import ndcg_per_query
from pipeline.metrics.inputs import EvalInputs, finish, one_hot, query_frame, require
from pipeline.ties import BLOCK, cut, fair_discount, tie_averaged

log = logging.getLogger(__name__)

UNGROUPED = "awrf_ungrouped_docs"
FALLBACK = "awrf_target_fallback"


AwrfTarget = Literal["uniform", "relevant"]


@dataclass(frozen=True)
class AwrfConfig(Checked):
    """The ``evaluate.awrf`` section: ``target`` distribution (``uniform``, or ``relevant``:
    the relevant documents' mixed 50/50 with the background, SPEC §4.6); ``trec_fair_2022``:
    also the track's own Task 1 metrics (``trecfair.nDCG``, ``trecfair.AWRF``,
    ``trecfair.Score``; ``pipeline.metrics.trec_fair2022``): ``auto`` where the alignments
    carry the track's fairness dimensions, or ``on``/``off``."""

    target: AwrfTarget = "uniform"
    trec_fair_2022: track.Mode = "auto"


DEFAULT = AwrfConfig()


def awrf(ctx: EvalInputs, cutoffs: tuple[int, ...], cfg: AwrfConfig = DEFAULT) -> pl.DataFrame:
    """Per-query `AWRF@k` (and `nDCGxAWRF@k` when qrels are given) for every k, over the
    evaluation's alignments (else the one-hot `doc_groups`) and the target ``cfg.target``;
    with the TREC Fair 2022 variant, the track's Task 1 metrics too."""
    aligned = ctx.alignments
    if aligned is None:
        aligned = one_hot(require(ctx, "doc_groups", "awrf"))
    if not aligned.height:
        what = "doc_groups holds no labelled" if ctx.alignments is None else "alignments hold no"
        raise InputError(
            f"awrf: {what} document, so there is no group to compare; label documents F, M or "
            "N in the corpus's `group` column, or leave doc_groups None to skip AWRF"
        )
    qrels = None if cfg.target == "uniform" else require(ctx, "qrels", "awrf (relevant)")
    out = awrf_alignments(ctx.run, aligned, cutoffs, cfg.target, qrels)
    if ctx.qrels is None:
        log.info("AWRF: no qrels, so nDCGxAWRF is not computed")
    else:
        out = _with_ndcg_product(out, ctx.run, ctx.qrels, cutoffs)
    out = out.select(
        "query_id",
        *(c for c in out.columns if c not in ("query_id", UNGROUPED, FALLBACK)),
        UNGROUPED,
        FALLBACK,
    )
    out = finish(query_frame(ctx.run), out, [UNGROUPED, FALLBACK]).with_columns(
        pl.col(f"AWRF@{k}").is_null().cast(pl.Int64).alias(f"awrf_skipped@{k}") for k in cutoffs
    )
    _log_counts(out, cutoffs)
    if track.applies(cfg.trec_fair_2022, ctx.dimensions):
        task1 = track.task1_metrics(ctx.run, require(ctx, "qrels", "awrf"), ctx.dimensions)
        out = out.join(task1, on="query_id", how="left", maintain_order="left")
    return out


def awrf_alignments(
    run: pl.DataFrame,
    alignments: pl.DataFrame,
    cutoffs: Sequence[int],
    target: str = "uniform",
    qrels: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """`query_id`, `AWRF@k` per cut-off, `awrf_ungrouped_docs`, `awrf_target_fallback` of
    `run` (`query_id, doc_id, score, rank`) over `alignments` (`doc_id, group, weight`);
    target `uniform`, or `relevant` (needs `qrels`)."""
    base = query_frame(run)
    weights = {f"_w{k}": cut(k, fair_discount) for k in cutoffs}
    # tie-averaged discounts; sorted so the float sums below add in one fixed order that does
    # not depend on the order of tied documents (bit-identical reruns)
    ranked = tie_averaged(run, weights, max(cutoffs))
    ranked = ranked.join(alignments, on="doc_id", how="left", maintain_order="left")
    ranked = ranked.sort("query_id", BLOCK, "doc_id", "group", nulls_last=True)
    counts = ranked.group_by("query_id", "doc_id", maintain_order=True).agg(
        pl.col("group").is_null().all().alias("_none")
    )
    counts = counts.group_by("query_id", maintain_order=True).agg(
        pl.col("_none").sum().cast(pl.Int64).alias(UNGROUPED)
    )
    goal = _target(base, alignments, target, qrels)
    out = base
    for k in cutoffs:
        dist = run_distribution(ranked, f"_w{k}")
        values = one_minus_jsd(dist, goal.drop(FALLBACK), f"AWRF@{k}")
        out = out.join(values, on="query_id", how="left", maintain_order="left")
    fallback = goal.group_by("query_id", maintain_order=True).agg(pl.col(FALLBACK).first())
    return out.join(counts, on="query_id", how="left", maintain_order="left").join(
        fallback, on="query_id", how="left", maintain_order="left"
    )


def run_distribution(ranked: pl.DataFrame, weight: str) -> pl.DataFrame:
    """`query_id, group, p`: the `weight`-weighted mean alignment of the aligned documents.

    `ranked` holds `query_id, group, weight` (a document's share of the group) and the
    (tie-averaged, cut-off) discount column `weight`, sorted as `awrf_alignments` sorts it;
    unaligned documents and documents of weight 0 are dropped.
    """
    aligned = ranked.filter(pl.col("group").is_not_null() & (pl.col(weight) > 0))
    mass = aligned.group_by("query_id", "group", maintain_order=True).agg(
        (pl.col(weight) * pl.col("weight")).sum().alias("_w")
    )
    return mass.select(
        "query_id", "group", (pl.col("_w") / pl.col("_w").sum().over("query_id")).alias("p")
    )


def _target(
    base: pl.DataFrame, alignments: pl.DataFrame, target: str, qrels: pl.DataFrame | None
) -> pl.DataFrame:
    """`query_id, group, q, awrf_target_fallback` for every run query × aligned group; the
    background is each group's share of the total alignment mass (the mean alignment of the
    aligned documents when each sums to 1)."""
    groups = alignments.group_by("group").agg(pl.col("weight").sum().alias("_n")).sort("group")
    grid = base.join(groups, how="cross")
    if target == "uniform":
        return grid.select(
            "query_id",
            "group",
            pl.lit(1.0 / groups.height).alias("q"),
            pl.lit(0, pl.Int64).alias(FALLBACK),
        )
    if target != "relevant" or qrels is None:
        raise InputError(
            f"AWRF target must be 'uniform' or 'relevant' (with qrels), got {target!r} "
            f"with qrels {'present' if qrels is not None else 'None'}"
        )
    relevant = qrels.filter(pl.col("relevance") > 0).join(alignments, on="doc_id")
    relevant = relevant.sort("query_id", "doc_id", "group")
    shares = relevant.group_by("query_id", "group", maintain_order=True).agg(
        pl.col("weight").sum().alias("_r")
    )
    shares = shares.with_columns((pl.col("_r") / pl.col("_r").sum().over("query_id")).alias("_rel"))
    grid = grid.join(shares.drop("_r"), on=["query_id", "group"], how="left").with_columns(
        (pl.col("_n") / pl.col("_n").sum().over("query_id")).alias("_bg"),
        pl.col("_rel").is_null().all().over("query_id").cast(pl.Int64).alias(FALLBACK),
    )
    q = (
        pl.when(pl.col(FALLBACK) == 1)
        .then(pl.col("_bg"))
        .otherwise(0.5 * pl.col("_rel").fill_null(0.0) + 0.5 * pl.col("_bg"))
    )
    return grid.select("query_id", "group", q.alias("q"), FALLBACK)


def _with_ndcg_product(
    out: pl.DataFrame, run: pl.DataFrame, qrels: pl.DataFrame, cutoffs: tuple[int, ...]
) -> pl.DataFrame:
    ndcg = ndcg_per_query(run, qrels, cutoffs)
    out = out.join(ndcg, on="query_id", how="left", maintain_order="left")
    products = [
        (pl.col(f"nDCG@{k}") * pl.col(f"AWRF@{k}")).alias(f"nDCGxAWRF@{k}") for k in cutoffs
    ]
    return out.with_columns(products).drop(f"nDCG@{k}" for k in cutoffs)


def _log_counts(out: pl.DataFrame, cutoffs: tuple[int, ...]) -> None:
    n_ungrouped = int(out[UNGROUPED].sum())
    if n_ungrouped:
        log.warning("AWRF: %d ranked documents without a group label were dropped", n_ungrouped)
    n_fallback = int(out[FALLBACK].sum())
    if n_fallback:
        log.warning(
            "AWRF: %d queries have no labelled relevant document; target = background", n_fallback
        )
    for k in cutoffs:
        n = int(out[f"awrf_skipped@{k}"].sum())
        if n:
            log.warning("AWRF@%d: %d queries skipped (no labelled document in the top %d)", k, n, k)


RECORD = Metric(
    "awrf",
    awrf,
    (
        Measure("AWRF@{k}", "↑", "1 − JSD of the run's group exposure and the target",
                lo=1 - math.log(2), hi=1.0, table="extra", ir_measures="AWRF", transfer=True,
                report=(("judged", 4),)),
        Measure("nDCGxAWRF@{k}", "↑", "nDCG@k × AWRF@k per query (TREC Fair 2022 Task 1)",
                lo=0.0, hi=1.0, ir_measures="nDCGxAWRF"),
        *track.TASK1_MEASURES,
    ),
    reference="Sapiezynski et al., WWW 2019 companion; TREC Fair Ranking 2022 (Ekstrand et al.)",
    order=50,
    config=AwrfConfig,
)  # fmt: skip
