"""Comparison of every method with the baseline (SPEC §4.8, §4.9).

For each method and metric:

- the aggregate is the mean over the queries where the metric is not null (the same
  denominator as `pipeline.metrics.suite.aggregate`, so it equals the value in
  `metrics/<method>.json`);
- the change is `100 · (method − baseline) / |baseline|` in percent (null when the baseline
  aggregate is 0): the sign says whether the metric went up or down, whatever the metric's
  direction;
- the test compares the method with the baseline with the **trained model as the unit of
  noise** (`pipeline.model_test.model_query_test`, SPEC §4.9): each query is scored by its
  fold's model in each seed (seed × fold = one model; the fold of each query comes from the
  per-query frames' own `fold` column, else from `folds`, else each seed is one model), a
  crossed random-effects model of the paired differences with a model and a query effect,
  neither of which can vanish from the standard error, and a t interval and p with
  conservative Satterthwaite df; with one seed it is the paired two-sided t-test over the
  queries present and non-null in both. The p-values are adjusted across the compared
  methods per metric (`correction`: Bonferroni `min(1, p · m)` with `m` the number of
  methods compared with the baseline, or Holm-Bonferroni), and a difference is significant
  when the adjusted p is below `alpha` (0.05);
- `diff`, `ci_low`, `ci_high`: the mean paired difference (method − baseline, metric units)
  and its 95% interval; `ci_adj_low`, `ci_adj_high`: the interval at the Bonferroni level
  `1 − alpha / m`, the one the report's wording uses; `se`, `df`, `n_models`: the standard
  error, its degrees of freedom and the number of trained models per side;
- `sd_diff`: the standard deviation over queries of the per-query differences of the seed
  means; `mde`: the minimal detectable effect at 80% power and level `alpha / m` from the
  test's own standard error and df, `(t_{df,1−α/2m} + t_{df,0.8})·se`; `mde_limit`: the
  largest difference the metric can take from the baseline's value (its record's range);
  `mde` is null where it exceeds that limit (no change the metric can take is detectable);
- direction metrics (`SIGN_TESTED`): `sign_plus` / `sign_minus` count the queries whose value
  (mean over seeds) rose / fell against the baseline (descriptive; the test is the model
  test above, as for every metric);
- **balance** of a signed metric (direction `→x` in its record: the male-wins share →0.5,
  the signed gap and ARaB →0), on every row, the baseline's included: `target` (x),
  `target_diff` (the mean minus x), `target_low`, `target_high` (its interval at the
  Bonferroni level), `target_p_adjusted`, `target_se` and `target_df`, by the same model test
  (the equivalence test of the balance reads them, `pipeline.report.verdict_rule`);
- `var_model`, `var_query`, `var_resid`: the test's fitted variance components (null with one
  seed), from which the *Design and power* table simulates the MDE (`pipeline.model_power`).

Several seeds: a method's per-query metrics may be a mapping `seed → frame`. The aggregate is
then the mean ± sample standard deviation (ddof 1) over seeds of the per-seed aggregates; the
test reads every seed's per-query values (a query missing in any seed is left out of it);
seed s of the method is paired with seed s of the baseline (the same data draws); a row with
one seed (the untrained model) is a fixed reference for every seed of the other.

**Decision**: `ranx.compare` is not used: it recomputes its own metrics from qrels and runs
(no ARaB, NFaiRR, LIWC or gap), has no multiple-comparison correction and no model unit;
`pipeline.report.ranx_export` writes the comparison in ranx's `Report` shape.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.metrics import MEASURES
from pipeline.model_test import ModelTest, model_query_test
from pipeline.report.per_query import (
    FOLD,
    Aligned,
    PerQuery,
    aligned,
    as_seeds,
    change_pct,
    fold_matrix,
    metric_columns,
    paired_ttest,
    paired_values,
    query_means,
    seed_aggregates,
    seed_matrix,
)
from pipeline.stats import TTest, adjust, bonferroni, mde_se, mean_std

log = logging.getLogger(__name__)

ALPHA = 0.05

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
    "n_models": pl.Int64,
    "significant": pl.Boolean,
    "sd_diff": pl.Float64,
    "mde": pl.Float64,
    "mde_limit": pl.Float64,
    "sign_plus": pl.Int64,
    "sign_minus": pl.Int64,
    "target": pl.Float64,
    "target_diff": pl.Float64,
    "target_low": pl.Float64,
    "target_high": pl.Float64,
    "target_p_adjusted": pl.Float64,
    "target_se": pl.Float64,
    "target_df": pl.Float64,
    "var_model": pl.Float64,
    "var_query": pl.Float64,
    "var_resid": pl.Float64,
}
SIGN_TESTED = tuple(m.key for m in MEASURES if m.sign_test)
"""Direction metrics (SPEC §4.9; the measures whose record names a ``sign_test``): besides
their model test, `sign_plus` / `sign_minus` count the queries whose value (mean over seeds)
is above / below the baseline's (ties dropped)."""

__all__ = [
    "ALPHA",
    "COMPARISON_SCHEMA",
    "FOLD",
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
    "seed_matrix",
]


def compare(
    per_query: Mapping[str, PerQuery],
    baseline: str,
    metrics: Sequence[str] | None = None,
    *,
    reference: Collection[str] = (),
    alpha: float = ALPHA,
    correction: str = "bonferroni",
    folds: pl.DataFrame | None = None,
    family: int | None = None,
) -> pl.DataFrame:
    """One row per (method, metric), methods in the given order (schema `COMPARISON_SCHEMA`).

    Methods in `reference` (e.g. the first-stage `bm25`) and the baseline itself get their
    aggregates (and balance) but no change and no test; every other method is compared with
    `baseline`, and those methods form the family that `correction` adjusts over, per metric.
    `folds`: `query_id, fold[, seed]`, the fold model that scored each query (see the module).
    `family`: the number of comparisons the correction counts (default: the compared methods;
    the controls' pairs are compared two methods at a time but adjusted as one family).
    """
    if baseline not in per_query:
        raise InputError(f"baseline {baseline!r} has no per-query metrics; got {list(per_query)}")
    if metrics is None:
        metrics = metric_columns(next(iter(as_seeds(per_query[baseline]).values())))
    compared = [m for m in per_query if m != baseline and m not in reference]
    m_count = max(1, len(compared), family or 0)
    cache = Aligned()
    rows = []
    for metric in metrics:
        base_mean, _ = mean_std(seed_aggregates(per_query[baseline], metric))
        base_ids = query_means(per_query[baseline], metric)["query_id"].to_list()
        tested = {m: _test(per_query[baseline], per_query[m], metric, base_ids, folds, cache)
                  for m in compared}  # fmt: skip
        p_values = [None if t[0] is None else t[0].p for t in tested.values()]
        padded = adjust([*p_values, *[None] * (m_count - len(p_values))], correction)
        adjusted = dict(zip(compared, padded, strict=False))
        for method, frames in per_query.items():
            row = _row(method, metric, frames, base_mean)
            if method in tested:
                row |= _tested_row(row, metric, base_mean, tested[method], adjusted[method],
                                   m_count, alpha)  # fmt: skip
                if metric in SIGN_TESTED:
                    row |= sign_row(per_query[baseline], frames, metric)
            row |= balance_row(frames, metric, folds, m_count, alpha, cache)
            rows.append(row)
    log.info("compared %d methods with %r on %d metrics (model unit, %s)",
             len(compared), baseline, len(metrics), correction)  # fmt: skip
    return _ordered(pl.DataFrame(rows, schema=COMPARISON_SCHEMA), list(per_query))


def _test(
    base: PerQuery, other: PerQuery, metric: str, ids: Sequence[str], folds: pl.DataFrame | None,
    cache: Aligned | None = None,
) -> tuple[ModelTest | None, float | None, float]:  # fmt: skip
    """The model test of ``other − base``, the sd of the per-query differences of the seed
    means, and the sign (−1: the test ran as ``base − other``)."""
    o, b, fold, sign = aligned(base, other, metric, ids, folds, cache)
    test = model_query_test(o, b, fold)
    keep = np.isfinite(o).all(axis=0) & np.isfinite(b).all(axis=0)
    d = o[:, keep].mean(axis=0) - b[:, keep].mean(axis=0)
    return test, (float(d.std(ddof=1)) if d.size > 1 else None), sign


def sign_row(base: PerQuery, other: PerQuery, metric: str) -> dict[str, Any]:
    """How many queries' values (mean over seeds) rose and fell against ``base``."""
    a, b = paired_values(query_means(base, metric), query_means(other, metric), metric)
    scale = 1e-12 * max(1.0, float(np.abs(a).max(initial=0)), float(np.abs(b).max(initial=0)))
    return {"sign_plus": int((b - a > scale).sum()), "sign_minus": int((a - b > scale).sum())}


def target_of(metric: str) -> float | None:
    """The fair point of a signed metric (direction `→x` in its record), else null."""
    from pipeline.metrics import measure_of

    measure = measure_of(metric.removeprefix("transfer."))
    if measure is None or not measure.direction.startswith("→"):
        return None
    return float(measure.direction[1:])


def balance_row(
    frames: PerQuery, metric: str, folds: pl.DataFrame | None, m: int, alpha: float,
    cache: Aligned | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The balance of a signed metric: its mean against its fair point (model test at the
    Bonferroni level ``1 − alpha / m``)."""
    target = target_of(metric)
    if target is None:
        return {}
    ids = query_means(frames, metric)["query_id"].to_list()
    values = seed_matrix(frames, metric, ids, cache)
    test = model_query_test(values, target, fold_matrix(frames, ids, folds, cache))
    if test is None:
        return {"target": target}
    low, high = test.interval(1 - alpha / m)
    return {"target": target, "target_diff": test.diff, "target_low": low, "target_high": high,
            "target_p_adjusted": bonferroni(test.p, m), "target_se": test.se,
            "target_df": test.df if np.isfinite(test.df) else None}  # fmt: skip


def mde_limit(metric: str, base_mean: float | None) -> float | None:
    """The largest difference from ``base_mean`` that the metric's range allows (null when
    the range is open)."""
    from pipeline.metrics import measure_of

    measure = measure_of(metric.removeprefix("transfer."))
    if measure is None or base_mean is None or not np.isfinite([measure.lo, measure.hi]).all():
        return None
    return max(measure.hi - base_mean, base_mean - measure.lo)


def _tested_row(
    row: Mapping[str, Any], metric: str, base_mean: float | None,
    tested: tuple[ModelTest | None, float | None, float], p_adj: float | None, m: int,
    alpha: float,
) -> dict[str, Any]:  # fmt: skip
    test, sd, sign = tested
    out: dict[str, Any] = {
        "change_pct": change_pct(row["mean"], base_mean), "p_adjusted": p_adj,
        "significant": p_adj is not None and p_adj < alpha, "sd_diff": sd,
        "mde_limit": mde_limit(metric, base_mean),
    }  # fmt: skip
    if test is None:
        return out | {"n_pairs": 0}
    lo, hi = sorted(sign * v for v in test.interval(1 - alpha / m))
    low, high = sorted(sign * v for v in test.interval(0.95))
    gap = mde_se(test.se, test.df, m, alpha) if test.se > 0 else None
    limit = out["mde_limit"]
    var = dict(zip(("var_model", "var_query", "var_resid"), test.components or (), strict=False))
    return out | var | {
        "diff": sign * test.diff, "ci_low": low, "ci_high": high, "ci_adj_low": lo,
        "ci_adj_high": hi, "se": test.se, "df": test.df if np.isfinite(test.df) else None,
        "p": test.p, "n_pairs": test.n_queries, "n_models": test.n_models,
        "mde": None if gap is None or (limit is not None and gap > limit) else gap,
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
