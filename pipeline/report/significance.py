"""Comparison of every method with the baseline (SPEC §4.8).

For each method and metric:

- the aggregate is the mean over the queries where the metric is not null (the same
  denominator as `pipeline.metrics.suite.aggregate`, so it equals the value in
  `metrics/<method>.json`);
- the change is `100 · (method − baseline) / |baseline|` in percent (null when the baseline
  aggregate is 0): the sign says whether the metric went up or down, whatever the metric's
  direction;
- the test is a paired two-sided t-test (`pipeline.stats.paired_ttest`) over the per-query
  values of the queries present and non-null in both, adjusted across the compared methods
  per metric (`correction`: Bonferroni `min(1, p · m)` with `m` the number of methods compared
  with the baseline, or Holm-Bonferroni), and a difference is significant when the adjusted p
  is below `alpha` (0.05);
- `diff`, `ci_low`, `ci_high`: the mean of the paired per-query differences (method −
  baseline, metric units) and its paired bootstrap 95% percentile CI
  (`pipeline.stats.bootstrap_ci`, `bootstrap_samples` resamples seeded by `bootstrap_seed`).
  `diff` equals `mean − baseline` when both are averaged over the same queries (always, for
  one seed and a metric defined on every query).

Several seeds: a method's per-query metrics may be a mapping `seed → frame`. The aggregate is
then the mean ± sample standard deviation (ddof 1) over seeds of the per-seed aggregates, and
the test and the CI run on each query's mean over seeds.

**Decision**: `ranx.compare` is not used: it recomputes its own metrics from qrels and runs
(no ARaB, NFaiRR, LIWC or gap) and has no multiple-comparison correction; the test is the same
paired Student t-test, and `pipeline.report.ranx_export` writes the result in ranx's `Report`
shape. Degenerate pairs and missing tests: see `pipeline.stats`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.metrics.variation import COMPLEXITY
from pipeline.stats import (
    BOOTSTRAP_SAMPLES,
    BOOTSTRAP_SEED,
    TTest,
    adjust,
    bonferroni,
    bootstrap_ci,
    mean_std,
)
from pipeline.stats import paired_ttest as _ttest

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
    "diff": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "t": pl.Float64,
    "p": pl.Float64,
    "p_adjusted": pl.Float64,
    "n_pairs": pl.Int64,
    "significant": pl.Boolean,
}

__all__ = [
    "ALPHA",
    "COMPARISON_SCHEMA",
    "PerQuery",
    "TTest",
    "as_seeds",
    "bonferroni",
    "change_pct",
    "compare",
    "mean_std",
    "metric_columns",
    "paired_ttest",
    "paired_values",
    "query_means",
    "seed_aggregates",
]


def as_seeds(frames: PerQuery) -> dict[int, pl.DataFrame]:
    """`frames` as `seed → frame` (a single frame is seed 0)."""
    if isinstance(frames, pl.DataFrame):
        return {0: frames}
    if not frames:
        raise InputError("a method has an empty mapping of seeds; expected at least one frame")
    return dict(frames)


QUERY_ATTRIBUTES = frozenset({COMPLEXITY})
"""Float64 per-query columns that describe the query, not the ranking (the same for every
method): never compared."""


def metric_columns(frame: pl.DataFrame) -> list[str]:
    """The Float64 metric columns of a per-query frame (count columns are Int64; query
    attributes such as ``var.complexity`` are not metrics)."""
    return [c for c, t in frame.schema.items() if t == pl.Float64 and c not in QUERY_ATTRIBUTES]


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


def paired_values(
    base: pl.DataFrame, other: pl.DataFrame, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """`(base, other)` values of `metric` on the queries non-null and finite in both, aligned."""
    pairs = (
        base.select("query_id", pl.col(metric).alias("_a"))
        .join(other.select("query_id", pl.col(metric).alias("_b")), on="query_id", how="inner")
        .drop_nulls()
        .filter(pl.col("_a").is_finite() & pl.col("_b").is_finite())
        .sort("query_id")
    )
    return pairs["_a"].to_numpy(), pairs["_b"].to_numpy()


def paired_ttest(base: pl.DataFrame, other: pl.DataFrame, metric: str) -> TTest:
    """Paired two-sided t-test of `other − base` over the queries non-null in both."""
    return _ttest(*paired_values(base, other, metric))


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
    correction: str = "bonferroni",
    bootstrap_samples: int = BOOTSTRAP_SAMPLES,
    bootstrap_seed: int = BOOTSTRAP_SEED,
) -> pl.DataFrame:
    """One row per (method, metric), methods in the given order (schema `COMPARISON_SCHEMA`).

    Methods in `reference` (e.g. the first-stage `bm25`) and the baseline itself get their
    aggregates but no change and no test; every other method is compared with `baseline`, and
    those methods form the family that `correction` adjusts over, per metric.
    """
    if baseline not in per_query:
        raise InputError(f"baseline {baseline!r} has no per-query metrics; got {list(per_query)}")
    if metrics is None:
        metrics = metric_columns(next(iter(as_seeds(per_query[baseline]).values())))
    compared = [m for m in per_query if m != baseline and m not in reference]
    boot = {"n_resamples": bootstrap_samples, "seed": bootstrap_seed}
    rows = []
    for metric in metrics:
        base_mean, _ = mean_std(seed_aggregates(per_query[baseline], metric))
        base_q = query_means(per_query[baseline], metric)
        tested = {}
        for method in compared:
            a, b = paired_values(base_q, query_means(per_query[method], metric), metric)
            tested[method] = (_ttest(a, b), bootstrap_ci(b - a, **boot), a, b)
        adjusted = dict(
            zip(compared, adjust([tested[m][0].p for m in compared], correction), strict=True)
        )
        for method, frames in per_query.items():
            row = _row(method, metric, frames, base_mean)
            if method in tested:
                test, ci, a, b = tested[method]
                p_adj = adjusted[method]
                row |= {
                    "change_pct": change_pct(row["mean"], base_mean),
                    "diff": float(np.mean(b - a)) if a.size else None,
                    "ci_low": None if ci is None else ci[0],
                    "ci_high": None if ci is None else ci[1],
                    "t": test.t,
                    "p": test.p,
                    "p_adjusted": p_adj,
                    "n_pairs": test.n,
                    "significant": p_adj is not None and p_adj < alpha,
                }
            rows.append(row)
    log.info(
        "compared %d methods with %r on %d metrics (%s, bootstrap %d)",
        len(compared),
        baseline,
        len(metrics),
        correction,
        bootstrap_samples,
    )
    return _ordered(pl.DataFrame(rows, schema=COMPARISON_SCHEMA), list(per_query))


def _row(method: str, metric: str, frames: PerQuery, base_mean: float | None) -> dict[str, Any]:
    seeds = as_seeds(frames)
    mean, std = mean_std(seed_aggregates(frames, metric))
    n_queries = int(query_means(seeds, metric)[metric].drop_nulls().len())
    return dict.fromkeys(COMPARISON_SCHEMA) | {
        "method": method,
        "metric": metric,
        "mean": mean,
        "std": std,
        "n_seeds": len(seeds),
        "n_queries": n_queries,
        "baseline": base_mean,
    }


def _ordered(df: pl.DataFrame, methods: list[str]) -> pl.DataFrame:
    order = pl.DataFrame({"method": methods, "_o": list(range(len(methods)))})
    return df.join(order, on="method").sort("_o", maintain_order=True).drop("_o")
