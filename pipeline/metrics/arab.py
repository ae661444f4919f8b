"""ARaB: average rank bias (Rekabsaz & Schedl, SIGIR 2020, "Do neural ranking models
intensify gender bias?"), SPEC §4.2 and §1 "Ties".

For a query and measure x in {tc, tf, bool}, every ranked document contributes the pair
`(x_f, x_m)` of `doc_scores`. `RaB_q@t` is the component-wise mean over ranks 1..t and
`ARaB_q@k` the mean of `RaB_q@t` over t = 1..min(k, len), which is linear in the per-rank
pairs: `ARaB_q@k = Σ_r x_r w(r)` with `w(r) = (1/k') Σ_{t=r..k'} 1/t`, `k' = min(k, len)`.
Tied documents (equal scores) share the mean weight of the positions their block occupies
(`pipeline.ties`), so ARaB is the expectation over the orders of each tie block.
Per query we report

- `ARaB-x@k`     = male − female of `ARaB_q@k` (signed, as published; > 0 = male-leaning);
- `ARaB-x-abs@k` = |male − female| (a magnitude; lower is better).

Ranked documents missing from `doc_scores` contribute (0, 0) and are counted per query in
`arab_missing_doc_scores` (documents with a non-zero weight at max(k), i.e. in the top
max(k) or tied with a document there).
"""

from __future__ import annotations

import logging

import polars as pl

from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require
from pipeline.ties import arab_weight, tie_averaged

log = logging.getLogger(__name__)

MEASURES = ("tc", "tf", "bool")
MISSING = "arab_missing_doc_scores"


def arab(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per-query `ARaB-{tc,tf,bool}@k` and `ARaB-{x}-abs@k` for every k."""
    doc_scores = require(ctx, "doc_scores", "arab")
    weights = {f"_w{k}": arab_weight(k) for k in cutoffs}
    ranked = _with_pairs(tie_averaged(ctx.run, weights, max(cutoffs)), doc_scores)
    diff = {x: pl.col(f"{x}_m") - pl.col(f"{x}_f") for x in MEASURES}
    values = ranked.group_by("query_id", maintain_order=True).agg(
        *(
            (diff[x] * pl.col(f"_w{k}")).sum().alias(f"ARaB-{x}@{k}")
            for k in cutoffs
            for x in MEASURES
        ),
        pl.col("_missing").sum().alias(MISSING),
    )
    values = values.with_columns(
        pl.col(f"ARaB-{x}@{k}").abs().alias(f"ARaB-{x}-abs@{k}") for k in cutoffs for x in MEASURES
    )
    order = [c for k in cutoffs for c in _columns(k)]
    values = values.select("query_id", *order, MISSING)
    n_missing = int(values[MISSING].sum())
    if n_missing:
        log.warning("ARaB: %d ranked documents missing from doc_scores count as (0, 0)", n_missing)
    return finish(query_frame(ctx.run), values, [MISSING])


def _columns(k: int) -> list[str]:
    """The metric columns of cut-off k, in the order the table has always had."""
    return [f"ARaB-{x}@{k}" for x in MEASURES] + [f"ARaB-{x}-abs@{k}" for x in MEASURES]


def _with_pairs(ranked: pl.DataFrame, doc_scores: pl.DataFrame) -> pl.DataFrame:
    """Attach the (x_f, x_m) columns; documents without scores get zeros and `_missing` = 1."""
    cols = [f"{x}_{g}" for x in MEASURES for g in ("f", "m")]
    scores = doc_scores.select("doc_id", *cols).with_columns(pl.lit(0, pl.Int64).alias("_missing"))
    out = ranked.join(scores, on="doc_id", how="left", maintain_order="left")
    return out.with_columns(pl.col(cols).fill_null(0.0), pl.col("_missing").fill_null(1))


def _measures(x: str) -> tuple[Measure, Measure]:
    return (
        Measure(f"ARaB-{x}@{{k}}", "→0", f"rank bias of the top k by {x} (male − female)",
                table="core", magnitude=f"ARaB-{x}-abs@{{k}}", ir_measures=f"ARaB_{x}",
                transfer=x == "tf"),
        Measure(f"ARaB-{x}-abs@{{k}}", "↓", f"|male − female| rank bias of the top k by {x}",
                lo=0.0, label=f"|ARaB-{x}|", ir_measures=f"ARaB_{x}_abs", transfer=x == "tf",
                headline=x == "tf", tradeoff=(2, "arab") if x == "tf" else None,
                report=(("findings", 3), ("controls", 1), ("judged", 3)) if x == "tf" else ()),
    )  # fmt: skip


RECORD = Metric(
    "arab",
    arab,
    tuple(m for x in MEASURES for m in _measures(x)),
    reference="Rekabsaz & Schedl, SIGIR 2020 (ARaB)",
    order=20,
)
