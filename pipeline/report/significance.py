"""Comparison of every method with the baseline (SPEC §4.8).

For each method and metric:

- the aggregate is the mean over the queries where the metric is not null (the same
  denominator as `pipeline.metrics.suite.aggregate`, so it equals the value in
  `metrics/<method>.json`);
- the change is `100 · (method − baseline) / |baseline|` in percent (null when the baseline
  aggregate is 0): the sign says whether the metric went up or down, whatever the metric's
  direction;
- the test is a paired two-sided t-test (`scipy.stats.ttest_rel`) over the per-query values of
  the queries present and non-null in both, Bonferroni-adjusted across the compared methods
  (`min(1, p · m)` with `m` the number of methods compared with the baseline, per metric), and
  a difference is significant when the adjusted p is below `alpha` (0.05).

Several seeds: a method's per-query metrics may be a mapping `seed → frame`. The aggregate is
then the mean ± sample standard deviation (ddof 1) over seeds of the per-seed aggregates, and
the test runs on each query's mean over seeds.

**Decision**: `ranx.compare` is not used: it recomputes its own metrics from qrels and runs
(no ARaB, NFaiRR, LIWC or gap) and has no multiple-comparison correction; the test is the same
paired Student t-test. **Decision**: a pair whose per-query differences are all equal is not
passed to scipy (its variance is 0): all zero gives p = 1, a constant non-zero shift p = 0.
Fewer than 2 paired queries: no test (p null).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

log = logging.getLogger(__name__)

ALPHA = 0.05
PerQuery = pl.DataFrame | Mapping[int, pl.DataFrame]
"""One method's per-query metrics: one frame, or one frame per training seed."""

COMPARISON_SCHEMA = {
    "method": pl.Utf8,
    "metric": pl.Utf8,
    "mean": pl.Float64,
    "std": pl.Float64,
    "n_seeds": pl.Int64,
    "n_queries": pl.Int64,
    "baseline": pl.Float64,
    "change_pct": pl.Float64,
    "t": pl.Float64,
    "p": pl.Float64,
    "p_adjusted": pl.Float64,
    "n_pairs": pl.Int64,
    "significant": pl.Boolean,
}


@dataclass(frozen=True)
class TTest:
    """A paired t-test: statistic (null when degenerate), two-sided p, number of pairs."""

    t: float | None
    p: float | None
    n: int


def as_seeds(frames: PerQuery) -> dict[int, pl.DataFrame]:
    """`frames` as `seed → frame` (a single frame is seed 0)."""
    if isinstance(frames, pl.DataFrame):
        return {0: frames}
    if not frames:
        raise ValueError("a method has an empty mapping of seeds; expected at least one frame")
    return dict(frames)


def metric_columns(frame: pl.DataFrame) -> list[str]:
    """The Float64 metric columns of a per-query frame (count columns are Int64)."""
    return [c for c, t in frame.schema.items() if t == pl.Float64]


def query_means(frames: PerQuery, metric: str) -> pl.DataFrame:
    """`query_id, <metric>`: each query's mean over seeds (nulls skipped; all null → null)."""
    parts = [
        f.select("query_id", pl.col(metric).cast(pl.Float64))
        for f in as_seeds(frames).values()
        if metric in f.columns
    ]
    if not parts:
        return pl.DataFrame(schema={"query_id": pl.Utf8, metric: pl.Float64})
    both = pl.concat(parts)
    return both.group_by("query_id", maintain_order=True).agg(pl.col(metric).mean())


def seed_aggregates(frames: PerQuery, metric: str) -> list[float]:
    """Per seed, the mean of `metric` over its non-null queries (seeds without any left out)."""
    out = []
    for frame in as_seeds(frames).values():
        if metric in frame.columns and frame[metric].drop_nulls().len():
            out.append(float(frame[metric].drop_nulls().mean()))  # type: ignore[arg-type]
    return out


def mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (ddof 1; null for fewer than two values)."""
    if not values:
        return None, None
    mean = float(np.mean(values))
    std = float(np.std(values, ddof=1)) if len(values) > 1 else None
    return mean, std


def paired_ttest(base: pl.DataFrame, other: pl.DataFrame, metric: str) -> TTest:
    """Paired two-sided t-test of `other − base` over the queries non-null in both."""
    pairs = (
        base.select("query_id", pl.col(metric).alias("_a"))
        .join(other.select("query_id", pl.col(metric).alias("_b")), on="query_id", how="inner")
        .drop_nulls()
        .filter(pl.col("_a").is_finite() & pl.col("_b").is_finite())
    )
    n = pairs.height
    if n < 2:
        return TTest(None, None, n)
    a, b = pairs["_a"].to_numpy(), pairs["_b"].to_numpy()
    diff = b - a
    scale = max(1.0, float(np.abs(diff).max()))
    if float(np.ptp(diff)) <= 1e-12 * scale:
        return TTest(None, 1.0 if abs(float(diff[0])) <= 1e-12 * scale else 0.0, n)
    res = stats.ttest_rel(b, a)
    return TTest(float(res.statistic), float(res.pvalue), n)


def bonferroni(p: float | None, n_compared: int) -> float | None:
    """Bonferroni-adjusted p: `min(1, p · n_compared)`."""
    if p is None or math.isnan(p):
        return None
    return min(1.0, p * max(1, n_compared))


def change_pct(value: float | None, base: float | None) -> float | None:
    """`100 · (value − base) / |base|`; null when either is missing or the base is 0."""
    if value is None or base is None or base == 0:
        return None
    return 100.0 * (value - base) / abs(base)


def compare(
    per_query: Mapping[str, PerQuery],
    baseline: str,
    metrics: Sequence[str] | None = None,
    *,
    reference: Collection[str] = (),
    alpha: float = ALPHA,
) -> pl.DataFrame:
    """One row per (method, metric), methods in the given order (schema `COMPARISON_SCHEMA`).

    Methods in `reference` (e.g. the first-stage `bm25`) and the baseline itself get their
    aggregates but no change and no test; every other method is compared with `baseline`, and
    the number of those methods is the Bonferroni factor.
    """
    if baseline not in per_query:
        raise ValueError(f"baseline {baseline!r} has no per-query metrics; got {list(per_query)}")
    if metrics is None:
        metrics = metric_columns(next(iter(as_seeds(per_query[baseline]).values())))
    compared = [m for m in per_query if m != baseline and m not in reference]
    rows = []
    for metric in metrics:
        base_mean, _ = mean_std(seed_aggregates(per_query[baseline], metric))
        base_q = query_means(per_query[baseline], metric)
        for method, frames in per_query.items():
            row = _row(method, metric, frames, base_mean)
            if method in compared:
                test = paired_ttest(base_q, query_means(frames, metric), metric)
                p_adj = bonferroni(test.p, len(compared))
                row |= {
                    "change_pct": change_pct(row["mean"], base_mean),
                    "t": test.t,
                    "p": test.p,
                    "p_adjusted": p_adj,
                    "n_pairs": test.n,
                    "significant": p_adj is not None and p_adj < alpha,
                }
            rows.append(row)
    log.info("compared %d methods with %r on %d metrics", len(compared), baseline, len(metrics))
    return _ordered(pl.DataFrame(rows, schema=COMPARISON_SCHEMA), list(per_query))


def _row(method: str, metric: str, frames: PerQuery, base_mean: float | None) -> dict[str, Any]:
    seeds = as_seeds(frames)
    mean, std = mean_std(seed_aggregates(frames, metric))
    n_queries = int(query_means(seeds, metric)[metric].drop_nulls().len())
    return {
        "method": method,
        "metric": metric,
        "mean": mean,
        "std": std,
        "n_seeds": len(seeds),
        "n_queries": n_queries,
        "baseline": base_mean,
        "change_pct": None,
        "t": None,
        "p": None,
        "p_adjusted": None,
        "n_pairs": None,
        "significant": None,
    }


def _ordered(df: pl.DataFrame, methods: list[str]) -> pl.DataFrame:
    order = pl.DataFrame({"method": methods, "_o": list(range(len(methods)))})
    return df.join(order, on="method").sort("_o", maintain_order=True).drop("_o")
