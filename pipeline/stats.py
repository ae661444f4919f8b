"""Statistics of the comparisons (SPEC §4.8): mean ± std over seeds, the paired t-test,
multiple-comparison corrections and the paired bootstrap confidence interval.

Pure functions over numbers and numpy arrays; `pipeline.report.significance` applies them to
per-query metric tables and `stages/evaluate.py` to per-seed aggregates.

- `mean_std`: mean and sample standard deviation (ddof 1) over seeds.
- `paired_ttest`: paired two-sided Student t-test of `b − a` (`scipy.stats.ttest_rel`, the
  test ranx calls "student"). **Decision**: differences that are all equal are not passed to
  scipy (variance 0): all zero gives p = 1, a constant non-zero shift p = 0; fewer than two
  pairs give no test (p null).
- `bonferroni`: `min(1, p·m)`. `holm`: Holm-Bonferroni step-down (Holm 1979, "A simple
  sequentially rejective multiple test procedure"): with the m p-values sorted ascending,
  `p̃_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j))`. It controls the same family-wise error
  rate as Bonferroni and rejects at least as much. Missing p-values (no test) stay missing
  and are ranked last, i.e. counted in m as if p = 1, as Bonferroni counts every compared
  method.
- `bootstrap_ci`: paired bootstrap percentile interval of the mean per-query difference
  (Efron & Tibshirani 1993, ch. 13; Sakai 2014, "Statistical reform in information
  retrieval?"): resample the n differences with replacement `n_resamples` times (seeded),
  take the mean of each resample, report the (1 − level)/2 and (1 + level)/2 percentiles.
  A constant difference c gives the zero-width interval [c, c].
- the comparison over queries × seeds with the trained model as the unit of noise is
  `pipeline.model_test.model_query_test` (issue 29; it replaced a crossed query × seed model
  here whose seed part was truncated at zero, with df then n − 1: anti-conservative).
- `mde`: minimal detectable effect of a two-sided paired test at level α/m with power
  1 − β: `(z_{1−α/(2m)} + z_{1−β}) · sd / √n` (SPEC §4.9; normal approximation), the
  queries' part alone; `mde_se`: the same from a test's own standard error and degrees of
  freedom, `(t_{df,1−α/(2m)} + t_{df,1−β}) · se`, which includes the models' part (the
  design as run: with 6 models the model part can dominate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pipeline.errors import InputError

CORRECTIONS = ("bonferroni", "holm")
BOOTSTRAP_SAMPLES = 10_000
BOOTSTRAP_SEED = 0
LEVEL = 0.95


@dataclass(frozen=True)
class TTest:
    """A paired t-test: statistic (null when degenerate), two-sided p, number of pairs."""

    t: float | None
    p: float | None
    n: int


def mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (ddof 1; null for fewer than two values)."""
    if not values:
        return None, None
    mean = float(np.mean(values))
    std = float(np.std(values, ddof=1)) if len(values) > 1 else None
    return mean, std


def _constant(diff: np.ndarray) -> bool:
    """All differences equal (up to 1e-12 relative to their scale)."""
    scale = max(1.0, float(np.abs(diff).max()))
    return float(np.ptp(diff)) <= 1e-12 * scale


def paired_ttest(a: np.ndarray | Sequence[float], b: np.ndarray | Sequence[float]) -> TTest:
    """Paired two-sided t-test of `b − a` over aligned, finite pairs."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise InputError(f"paired_ttest: {x.shape} and {y.shape} values are not paired")
    n = int(x.size)
    if n < 2:
        return TTest(None, None, n)
    diff = y - x
    if _constant(diff):
        scale = max(1.0, float(np.abs(diff).max()))
        return TTest(None, 1.0 if abs(float(diff[0])) <= 1e-12 * scale else 0.0, n)
    from scipy import stats  # here: scipy.stats costs ~1.7 s to import in every evaluate stage

    res = stats.ttest_rel(y, x)
    return TTest(float(res.statistic), float(res.pvalue), n)


def bonferroni(p: float | None, n_compared: int) -> float | None:
    """Bonferroni-adjusted p: `min(1, p · n_compared)`."""
    if p is None or math.isnan(p):
        return None
    return min(1.0, p * max(1, n_compared))


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values, in the input order (missing ones stay missing)."""
    m = len(p_values)
    present = [(p, i) for i, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    out: list[float | None] = [None] * m
    running = 0.0
    for rank, (p, i) in enumerate(sorted(present)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def adjust(p_values: Sequence[float | None], correction: str = "bonferroni") -> list[float | None]:
    """The p-values of one family (one metric, every compared method) adjusted together."""
    if correction == "bonferroni":
        return [bonferroni(p, len(p_values)) for p in p_values]
    if correction == "holm":
        return holm(p_values)
    raise InputError(f"unknown correction {correction!r}; known: {list(CORRECTIONS)}")


@lru_cache(maxsize=8)
def _resample_indices(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """`n_resamples × n` indices drawn with replacement (cached: shared by every metric)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    idx.setflags(write=False)
    return idx


def bootstrap_ci(
    diff: np.ndarray | Sequence[float],
    n_resamples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = LEVEL,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean of the paired differences (null for no pairs)."""
    d = np.asarray(diff, dtype=np.float64)
    if d.ndim != 1 or not np.isfinite(d).all():
        raise InputError("bootstrap_ci: expected a 1-d array of finite differences")
    if not 0 < level < 1:
        raise InputError(f"bootstrap_ci: level must be in (0, 1), got {level}")
    if n_resamples < 1:
        raise InputError(f"bootstrap_ci: n_resamples must be positive, got {n_resamples}")
    if d.size == 0:
        return None
    if _constant(d):
        return float(d[0]), float(d[0])
    means = d[_resample_indices(d.size, n_resamples, seed)].mean(axis=1)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def z_quantile(q: float) -> float:
    """The standard normal quantile (``statistics.NormalDist``: no scipy import)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(q)


def mde(sd: float, n: int, n_compared: int = 1, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimal detectable effect of a two-sided paired test at level ``alpha / n_compared``
    with the given power, for per-query differences of standard deviation ``sd`` over ``n``
    queries (SPEC §4.9)."""
    if n < 1:
        raise ValueError(f"mde: need at least one query, got n = {n}")
    z = z_quantile(1 - alpha / (2 * max(1, n_compared))) + z_quantile(power)
    return z * sd / math.sqrt(n)


def mde_se(
    se: float, df: float | None, n_compared: int = 1, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Minimal detectable effect of a test whose standard error is
    ``se`` with ``df`` degrees of freedom (``None`` or infinite: normal quantiles), two-sided
    at level ``alpha / n_compared`` with the given power."""
    q_a, q_b = 1 - alpha / (2 * max(1, n_compared)), power
    if df is None or not math.isfinite(df):
        return (z_quantile(q_a) + z_quantile(q_b)) * se
    from scipy import stats

    return float(stats.t.ppf(q_a, df) + stats.t.ppf(q_b, df)) * se
