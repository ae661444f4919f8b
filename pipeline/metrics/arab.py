"""ARaB: average rank bias (Rekabsaz & Schedl, SIGIR 2020, "Do neural ranking models
intensify gender bias?"), SPEC §4.2.

For a query and measure x in {tc, tf, bool}, every ranked document contributes the pair
`(x_f, x_m)` of `doc_scores`. `RaB_q@t` is the component-wise mean over ranks 1..t and
`ARaB_q@k` the mean of `RaB_q@t` over t = 1..min(k, len). Per query we report

- `ARaB-x@k`     = male − female of `ARaB_q@k` (signed, as published; > 0 = male-leaning);
- `ARaB-x-abs@k` = |male − female| (a magnitude; lower is better).

Ranked documents missing from `doc_scores` contribute (0, 0) and are counted per query in
`arab_missing_doc_scores` (within the top max(k)).
"""

from __future__ import annotations

import logging

import polars as pl

from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require, top_k

log = logging.getLogger(__name__)

MEASURES = ("tc", "tf", "bool")
MISSING = "arab_missing_doc_scores"


def arab(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per-query `ARaB-{tc,tf,bool}@k` and `ARaB-{x}-abs@k` for every k."""
    doc_scores = require(ctx, "doc_scores", "arab")
    ranked = _with_pairs(top_k(ctx.run, max(cutoffs)), doc_scores)
    rab = ranked.sort(["query_id", "rank"]).with_columns(_rab_diff(x) for x in MEASURES)
    per_k = [_arab_at(rab, k) for k in cutoffs]
    missing = ranked.group_by("query_id", maintain_order=True).agg(
        pl.col("_missing").sum().alias(MISSING)
    )
    values = per_k[0]
    for frame in [*per_k[1:], missing]:
        values = values.join(frame, on="query_id")
    n_missing = int(missing[MISSING].sum())
    if n_missing:
        log.warning("ARaB: %d ranked documents missing from doc_scores count as (0, 0)", n_missing)
    return finish(query_frame(ctx.run), values, [MISSING])


def _with_pairs(ranked: pl.DataFrame, doc_scores: pl.DataFrame) -> pl.DataFrame:
    """Attach the (x_f, x_m) columns; documents without scores get zeros and `_missing` = 1."""
    cols = [f"{x}_{g}" for x in MEASURES for g in ("f", "m")]
    scores = doc_scores.select("doc_id", *cols).with_columns(pl.lit(0, pl.Int64).alias("_missing"))
    out = ranked.join(scores, on="doc_id", how="left")
    return out.with_columns(pl.col(cols).fill_null(0.0), pl.col("_missing").fill_null(1))


def _rab_diff(x: str) -> pl.Expr:
    """`RaB_m@t − RaB_f@t` at every rank t (ranks are 1..n, so t = rank)."""
    cum = (pl.col(f"{x}_m") - pl.col(f"{x}_f")).cum_sum().over("query_id")
    return (cum / pl.col("rank")).alias(f"_rab_{x}")


def _arab_at(rab: pl.DataFrame, k: int) -> pl.DataFrame:
    """Mean of the RaB difference over t = 1..min(k, len): the signed and absolute ARaB@k."""
    means = (
        top_k(rab, k)
        .group_by("query_id", maintain_order=True)
        .agg(pl.col(f"_rab_{x}").mean().alias(f"ARaB-{x}@{k}") for x in MEASURES)
    )
    return means.with_columns(
        pl.col(f"ARaB-{x}@{k}").abs().alias(f"ARaB-{x}-abs@{k}") for x in MEASURES
    )
