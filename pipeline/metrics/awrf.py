"""AWRF: attention-weighted rank fairness (Sapiezynski et al., "Quantifying the impact of user
attention on fair group representation in ranked lists", WWW 2019 companion), as used by the
TREC Fair Ranking Track 2022 Task 1 (Ekstrand et al.), SPEC §4.6.

Each document carries one group label (`doc_groups.group`, e.g. F/M/N for Grep-BiasIR);
documents without a label are dropped (counted per query in `awrf_ungrouped_docs`, among the
documents with a non-zero weight at max(k)). With the discount `d(r) = 1 / log2(max(r, 2))`
at the document's run rank r (0 past k), tie-averaged: tied documents (equal scores) share the
mean discount of the positions their block occupies (`pipeline.metrics.ties`, SPEC §1
"Ties"), so the run's exposure vector is its expectation over the orders of each tie block:

- run distribution `p` = discount-weighted mean of the one-hot group vectors of the top k;
- target `q` = uniform over the known groups (`EvalInputs.awrf_target = "uniform"`), or
  ("relevant") the group distribution of the query's relevant documents (qrel > 0) mixed
  50/50 with the corpus-wide background distribution of `doc_groups`; a query without any
  labelled relevant document falls back to the background alone (`awrf_target_fallback`);
- `AWRF@k = 1 − JSD(p, q)`, `JSD = ½ KL(p‖m) + ½ KL(q‖m)`, `m = (p + q) / 2`, natural log, so
  AWRF ∈ [1 − ln 2, 1].

A query with no labelled document of non-zero weight in its top k gets null and
`awrf_skipped@k` = 1. With qrels, `nDCGxAWRF@k` is the per-query product nDCG@k × AWRF@k (the
track's Task 1 score; nDCG keeps the run's order, see `pipeline.metrics.effectiveness`).
"""

from __future__ import annotations

import logging

import polars as pl

from pipeline.metrics.effectiveness import ndcg_per_query
from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require
from pipeline.metrics.ties import cut, fair_discount, tie_averaged

log = logging.getLogger(__name__)

UNGROUPED = "awrf_ungrouped_docs"
FALLBACK = "awrf_target_fallback"


def awrf(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per-query `AWRF@k` (and `nDCGxAWRF@k` when qrels are given) for every k."""
    doc_groups = require(ctx, "doc_groups", "awrf")
    base = query_frame(ctx.run)
    weights = {f"_w{k}": cut(k, fair_discount) for k in cutoffs}
    ranked = tie_averaged(ctx.run, weights, max(cutoffs))
    ranked = ranked.join(doc_groups, on="doc_id", how="left", maintain_order="left")
    counts = ranked.group_by("query_id", maintain_order=True).agg(
        pl.col("group").null_count().cast(pl.Int64).alias(UNGROUPED)
    )
    target = _target(ctx, base, doc_groups)
    fallback = target.group_by("query_id", maintain_order=True).agg(pl.col(FALLBACK).first())
    out = base
    for k in cutoffs:
        dist = run_distribution(ranked, f"_w{k}")
        values = one_minus_jsd(dist, target.drop(FALLBACK), f"AWRF@{k}")
        out = out.join(values, on="query_id", how="left", maintain_order="left")
    if ctx.qrels is not None:
        out = _with_ndcg_product(out, ctx, cutoffs)
    else:
        log.info("AWRF: no qrels, so nDCGxAWRF is not computed")
    out = finish(finish(out, counts, [UNGROUPED]), fallback, [FALLBACK]).with_columns(
        pl.col(f"AWRF@{k}").is_null().cast(pl.Int64).alias(f"awrf_skipped@{k}") for k in cutoffs
    )
    _log_counts(out, cutoffs)
    return out


def run_distribution(ranked: pl.DataFrame, weight: str) -> pl.DataFrame:
    """`query_id, group, p`: `weight`-weighted share of each group among labelled documents.

    `ranked` holds `query_id, group` and the (tie-averaged, cut-off) discount column `weight`
    in the row order of `pipeline.metrics.ties.tie_averaged`; unlabelled documents and
    documents of weight 0 are dropped.
    """
    labelled = ranked.filter(pl.col("group").is_not_null() & (pl.col(weight) > 0))
    mass = labelled.group_by("query_id", "group", maintain_order=True).agg(
        pl.col(weight).sum().alias("_w")
    )
    return mass.select(
        "query_id", "group", (pl.col("_w") / pl.col("_w").sum().over("query_id")).alias("p")
    )


def one_minus_jsd(dist: pl.DataFrame, target: pl.DataFrame, name: str) -> pl.DataFrame:
    """`query_id, name` = 1 − JSD(p, q) (natural log) for the queries present in `dist`.

    `target` holds `query_id, group, q` for every query and every known group.
    """
    both = target.join(dist, on=["query_id", "group"], how="left").with_columns(
        pl.col("p").fill_null(0.0)
    )
    both = both.join(dist.select("query_id").unique(), on="query_id", how="semi")
    both = both.sort("query_id", "group")  # float sums in one fixed order: bit-identical reruns
    m = (pl.col("p") + pl.col("q")) / 2
    kl_terms = _xlogy(pl.col("p"), m) + _xlogy(pl.col("q"), m)
    return both.group_by("query_id", maintain_order=True).agg(
        (1.0 - 0.5 * kl_terms.sum()).alias(name)
    )


def _xlogy(x: pl.Expr, m: pl.Expr) -> pl.Expr:
    """`x ln(x / m)` with the convention 0 ln 0 = 0."""
    return pl.when(x > 0).then(x * (x / m).log()).otherwise(0.0)


def _target(ctx: EvalInputs, base: pl.DataFrame, doc_groups: pl.DataFrame) -> pl.DataFrame:
    """`query_id, group, q, awrf_target_fallback` for every run query × known group."""
    groups = (
        doc_groups.group_by("group", maintain_order=True).agg(pl.len().alias("_n")).sort("group")
    )
    if not groups.height:
        raise ValueError(
            "awrf: doc_groups holds no labelled document, so there is no group to compare; "
            "label documents F, M or N in the corpus's `group` column, or leave doc_groups "
            "None to skip AWRF"
        )
    grid = base.join(groups, how="cross")
    if ctx.awrf_target == "uniform":
        return grid.select(
            "query_id",
            "group",
            pl.lit(1.0 / groups.height).alias("q"),
            pl.lit(0, pl.Int64).alias(FALLBACK),
        )
    qrels = require(ctx, "qrels", "awrf (target 'relevant')")
    relevant = qrels.filter(pl.col("relevance") > 0).join(doc_groups, on="doc_id")
    shares = relevant.group_by("query_id", "group", maintain_order=True).agg(pl.len().alias("_r"))
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
    out: pl.DataFrame, ctx: EvalInputs, cutoffs: tuple[int, ...]
) -> pl.DataFrame:
    assert ctx.qrels is not None
    ndcg = ndcg_per_query(ctx.run, ctx.qrels, cutoffs)
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
