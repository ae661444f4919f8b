"""Comparison of every method with the baseline (SPEC §4.8).

For each method and metric:

- the aggregate is the mean over the queries where the metric is not null (the same
  denominator as `pipeline.metrics.suite.aggregate`, so it equals the value in
  `metrics/<method>.json`);
- the change is `100 · (method − baseline) / |baseline|` in percent (null when the baseline
  aggregate is 0): the sign says whether the metric went up or down, whatever the metric's
  direction;
- the test compares the method with the baseline over queries × seeds
  (`pipeline.stats.seed_query_test`, SPEC §4.9): a crossed random-effects model of the
  paired differences with a query and a seed effect, a t interval and p-value with
  Satterthwaite degrees of freedom; with one seed it is the paired two-sided t-test over the
  queries present and non-null in both. The p-values are adjusted across the compared
  methods per metric (`correction`: Bonferroni `min(1, p · m)` with `m` the number of
  methods compared with the baseline, or Holm-Bonferroni), and a difference is significant
  when the adjusted p is below `alpha` (0.05);
- `diff`, `ci_low`, `ci_high`: the mean paired difference (method − baseline, metric units)
  and its 95% interval; `ci_adj_low`, `ci_adj_high`: the interval at the Bonferroni level
  `1 − alpha / m`, the one the report's wording uses (a method is called better or worse
  only where it excludes zero); `se`, `df`: the standard error and its degrees of freedom;
- `sd_diff`, `mde`: the standard deviation over queries of the per-query differences of
  the seed means, and the minimal detectable effect of the design that was run at 80% power
  and level `alpha / m`, from the test's own standard error and df, so it includes the
  seeds' part of the variance (`pipeline.stats.mde_se`).

Several seeds: a method's per-query metrics may be a mapping `seed → frame`. The aggregate is
then the mean ± sample standard deviation (ddof 1) over seeds of the per-seed aggregates; the
test reads every seed's per-query values (a query missing in any seed is left out of it).

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
from pipeline.metrics import MEASURES
from pipeline.metrics.variation import COMPLEXITY
from pipeline.stats import (
    SeedQueryTest,
    TTest,
    adjust,
    bonferroni,
    mde_se,
    mean_std,
    seed_query_test,
    sign_test,
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
    "ci_adj_low": pl.Float64,
    "ci_adj_high": pl.Float64,
    "se": pl.Float64,
    "df": pl.Float64,
    "p": pl.Float64,
    "p_adjusted": pl.Float64,
    "n_pairs": pl.Int64,
    "significant": pl.Boolean,
    "sd_diff": pl.Float64,
    "mde": pl.Float64,
    "sign_plus": pl.Int64,
    "sign_minus": pl.Int64,
    "p_sign": pl.Float64,
}
SIGN_TESTED = tuple(m.key for m in MEASURES if m.sign_test)
"""Direction metrics (SPEC §4.9) that also get an exact paired sign test vs the baseline:
`sign_plus` / `sign_minus` = queries where the method's value (mean over seeds) is above /
below the baseline's, ties dropped; `p_sign` its two-sided p (not adjusted)."""

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


def seed_matrix(frames: PerQuery, metric: str, query_ids: Sequence[str]) -> np.ndarray:
    """``seeds × queries`` values of ``metric`` in the order of ``query_ids`` (NaN where a
    seed has no value)."""
    index = pl.DataFrame({"query_id": list(query_ids)}, schema={"query_id": pl.Utf8})
    rows = []
    for frame in as_seeds(frames).values():
        if metric not in frame.columns:
            rows.append(np.full(len(query_ids), np.nan))
            continue
        col = index.join(frame.select("query_id", pl.col(metric).cast(pl.Float64)),
                         on="query_id", how="left")[metric]  # fmt: skip
        rows.append(col.fill_null(float("nan")).to_numpy())
    return np.vstack(rows)


def compare(
    per_query: Mapping[str, PerQuery],
    baseline: str,
    metrics: Sequence[str] | None = None,
    *,
    reference: Collection[str] = (),
    alpha: float = ALPHA,
    correction: str = "bonferroni",
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
    adj_level = 1 - alpha / max(1, len(compared))
    rows = []
    for metric in metrics:
        base_mean, _ = mean_std(seed_aggregates(per_query[baseline], metric))
        base_ids = query_means(per_query[baseline], metric)["query_id"].to_list()
        tested = {m: _test(per_query[baseline], per_query[m], metric, base_ids) for m in compared}
        p_values = [None if t[0] is None else t[0].p for t in tested.values()]
        adjusted = dict(zip(compared, adjust(p_values, correction), strict=True))
        for method, frames in per_query.items():
            row = _row(method, metric, frames, base_mean)
            if method in tested:
                row |= _tested_row(row, base_mean, tested[method], adjusted[method], len(compared),
                                   alpha, adj_level)  # fmt: skip
                if metric in SIGN_TESTED:
                    row |= sign_row(per_query[baseline], frames, metric)
            rows.append(row)
    log.info("compared %d methods with %r on %d metrics (queries × seeds, %s)",
             len(compared), baseline, len(metrics), correction)  # fmt: skip
    return _ordered(pl.DataFrame(rows, schema=COMPARISON_SCHEMA), list(per_query))


def _test(
    base: PerQuery, other: PerQuery, metric: str, ids: Sequence[str]
) -> tuple[SeedQueryTest | None, float | None]:
    """The seed × query test of ``other − base`` and the sd of the per-query differences."""
    b, o = seed_matrix(base, metric, ids), seed_matrix(other, metric, ids)
    test = seed_query_test(o, b)
    keep = np.isfinite(o).all(axis=0) & np.isfinite(b).all(axis=0)
    d = o[:, keep].mean(axis=0) - b[:, keep].mean(axis=0)
    return test, (float(d.std(ddof=1)) if d.size > 1 else None)


def sign_row(base: PerQuery, other: PerQuery, metric: str) -> dict[str, Any]:
    """The exact paired sign test of ``other`` vs ``base`` over the queries whose value (mean
    over seeds) differs (``pipeline.stats.sign_test``)."""
    a, b = paired_values(query_means(base, metric), query_means(other, metric), metric)
    scale = 1e-12 * max(1.0, float(np.abs(a).max(initial=0)), float(np.abs(b).max(initial=0)))
    plus, minus = int((b - a > scale).sum()), int((a - b > scale).sum())
    return {"sign_plus": plus, "sign_minus": minus, "p_sign": sign_test(plus, minus)}


def _tested_row(
    row: Mapping[str, Any], base_mean: float | None,
    tested: tuple[SeedQueryTest | None, float | None], p_adj: float | None, m: int,
    alpha: float, adj_level: float,
) -> dict[str, Any]:  # fmt: skip
    test, sd = tested
    out: dict[str, Any] = {
        "change_pct": change_pct(row["mean"], base_mean), "p_adjusted": p_adj,
        "significant": p_adj is not None and p_adj < alpha, "sd_diff": sd,
    }  # fmt: skip
    if test is None:
        return out | {"n_pairs": 0}
    lo, hi = test.interval(adj_level)
    return out | {
        "diff": test.diff, "ci_low": test.low, "ci_high": test.high, "ci_adj_low": lo,
        "ci_adj_high": hi, "se": test.se, "df": test.df if np.isfinite(test.df) else None,
        "p": test.p, "n_pairs": test.n_queries,
        "mde": mde_se(test.se, test.df, m, alpha) if np.isfinite(test.se) else None,
    }  # fmt: skip


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
