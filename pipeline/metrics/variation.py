"""Per-query variation of effectiveness by query complexity (EqualizeIR, SPEC §4.5).

EqualizeIR (Cheng & Amiri, seed 001, §3 and Table 1) reports, over the test queries, the
mean μ, standard deviation σ and coefficient of variation c_v = σ/μ of nDCG@10, and nDCG@10
per linguistic-complexity bin (easy / medium / hard, Figure 3). These are aggregates, not
per-query means, so the family has two parts:

- :func:`variation` (registered in ``METRICS``) returns per run query ``var.complexity``
  (Float64, the query's complexity, null when absent from the complexity table) and 0/1
  Int64 flags ``var.n_<bin>`` that the suite sums into bin sizes;
- :func:`summarise` (registered in ``SUMMARIES``) turns the per-query table (with the
  effectiveness family's ``nDCG@10``) into flat keys ``var.nDCG@10.mean|std|cv``,
  ``var.nDCG@10.<bin>.mean|std|cv`` and ``var.nDCG@10.bin_spread`` = max − min bin mean.

σ is the sample standard deviation (ddof 1). A key that is undefined is left out (σ of one
query, c_v when μ = 0, the spread with fewer than two non-empty bins), since the metrics JSON
holds finite numbers only. Queries missing from the complexity table count overall but in
no bin (a warning gives their number).
"""

from __future__ import annotations

import logging

import polars as pl

from pipeline.bias.complexity import BINS
from pipeline.metrics.common import Metric
from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require

log = logging.getLogger(__name__)

MEASURE = "nDCG@10"
PREFIX = "var"
COMPLEXITY = f"{PREFIX}.complexity"
FLAGS = {b: f"{PREFIX}.n_{b}" for b in BINS}


def variation(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per run query: ``var.complexity`` and the 0/1 bin flags ``var.n_easy|medium|hard``."""
    table = require(ctx, "query_complexity", "variation")
    base = query_frame(ctx.run)
    values = table.select(
        "query_id",
        pl.col("complexity").alias(COMPLEXITY),
        *((pl.col("bin") == b).cast(pl.Int64).alias(flag) for b, flag in FLAGS.items()),
    )
    out = finish(base, values, list(FLAGS.values()))
    unbinned = out.filter(pl.sum_horizontal(list(FLAGS.values())) == 0).height
    if unbinned:
        log.warning("variation: %d run queries have no complexity bin", unbinned)
    return out


def spread(values: pl.Series, prefix: str) -> dict[str, float]:
    """``<prefix>.mean``, ``.std`` (ddof 1) and ``.cv`` = std/mean of `values`, where defined."""
    if values.len() == 0:
        return {}
    mean = float(values.mean())  # type: ignore[arg-type]
    out = {f"{prefix}.mean": mean}
    if values.len() > 1:
        std = float(values.std())  # type: ignore[arg-type]
        out[f"{prefix}.std"] = std
        if mean != 0:
            out[f"{prefix}.cv"] = std / mean
    return out


def summarise(per_query: pl.DataFrame, measure: str = MEASURE) -> dict[str, float]:
    """μ, σ, c_v of `measure` overall and per bin, and the bin spread (empty without inputs)."""
    if measure not in per_query.columns or not set(FLAGS.values()) <= set(per_query.columns):
        return {}
    prefix = f"{PREFIX}.{measure}"
    out = spread(per_query[measure].drop_nulls(), prefix)
    means = []
    for b, flag in FLAGS.items():
        values = per_query.filter(pl.col(flag) == 1)[measure].drop_nulls()
        stats = spread(values, f"{prefix}.{b}")
        out |= stats
        if f"{prefix}.{b}.mean" in stats:
            means.append(stats[f"{prefix}.{b}.mean"])
    if len(means) > 1:
        out[f"{prefix}.bin_spread"] = max(means) - min(means)
    return out


RECORD = Metric(
    "variation",
    variation,
    (),
    reference="Cheng & Amiri, NAACL 2025 (EqualizeIR)",
    order=80,
    summary=summarise,
)
