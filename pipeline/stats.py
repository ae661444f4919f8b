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
- `seed_query_test`: the comparison over queries × seeds (SPEC §4.9), a crossed
  random-effects model of the paired differences `d[s, q] = μ + a_s + b_q + e_sq` (seed
  effect a, query effect b; Searle, Casella & McCulloch 1992, "Variance Components", §4.6;
  Satterthwaite 1946 for the degrees of freedom). The estimate is the grand mean d̄; its
  variance `s²_q / n + max(0, s²_s − MS_e / n) / S` with `s²_q` the variance over queries of
  the per-query seed means, `s²_s` the variance over seeds of the per-seed query means and
  `MS_e` the residual mean square; df by Satterthwaite from the two parts (n − 1 and S − 1);
  a t interval and a two-sided t p-value. With one seed it is the paired t-test. With the
  same number of seeds on both sides (every method trains with `train.seeds`) the seeds are
  paired (seed s of the method and of the baseline draw the same data order where their
  orderings agree); otherwise each side contributes its own seed component. **Decision**: a
  two-level bootstrap was tried first and rejected: with 3 seeds it resamples only 10
  distinct seed sets and rejected a true null in 18% of simulated cases at α = 0.05
  (tests/unit/test_stats_two_level.py keeps the simulation for this model: ≈ 5%).
- `mde`: minimal detectable effect of a two-sided paired test at level α/m with power
  1 − β: `(z_{1−α/(2m)} + z_{1−β}) · sd / √n` (SPEC §4.9; normal approximation), the
  queries' part alone; `mde_se`: the same from a test's own standard error and degrees of
  freedom, `(t_{df,1−α/(2m)} + t_{df,1−β}) · se`, which includes the seeds' part (the
  design as run: with 3 seeds the seed part can dominate).
- `sign_test`: exact two-sided binomial sign test of `plus` vs `minus` (ties dropped).
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


@dataclass(frozen=True)
class SeedQueryTest:
    """A comparison over queries × seeds: mean difference, its standard error and
    Satterthwaite df, the interval at the level asked, the two-sided p, and the design."""

    diff: float
    se: float
    df: float
    low: float
    high: float
    p: float
    n_queries: int
    n_seeds: int

    def interval(self, level: float) -> tuple[float, float]:
        """The t interval of ``diff`` at ``level`` (e.g. a Bonferroni-adjusted 1 − α/m)."""
        if self.se == 0:
            return self.diff, self.diff
        from scipy import stats

        half = float(stats.t.ppf(0.5 + level / 2, self.df)) * self.se
        return self.diff - half, self.diff + half


def _seed_part(x: np.ndarray) -> tuple[float, float]:
    """``(variance, df)`` of the seed component of the grand mean of ``x`` (seeds × queries):
    ``max(0, s²_s − MS_e / n) / S``; zero for one seed."""
    s, n = x.shape
    if s < 2:
        return 0.0, 1.0
    seed_means, query_means = x.mean(axis=1), x.mean(axis=0)
    resid = x - seed_means[:, None] - query_means[None, :] + x.mean()
    ms_e = float((resid**2).sum()) / max(1, (s - 1) * (n - 1))
    return max(0.0, float(seed_means.var(ddof=1)) - ms_e / n) / s, float(s - 1)


def seed_query_test(
    method: np.ndarray, base: np.ndarray, level: float = LEVEL
) -> SeedQueryTest | None:
    """Compare ``method`` with ``base``, each ``seeds × queries`` (the same queries in the
    same column order; NaN where a seed has no value). Queries with a NaN on either side are
    dropped; null when fewer than two queries are left."""
    m = np.atleast_2d(np.asarray(method, dtype=np.float64))
    b = np.atleast_2d(np.asarray(base, dtype=np.float64))
    if m.shape[1] != b.shape[1]:
        raise ValueError(f"seed_query_test: {m.shape} and {b.shape} are not query-aligned")
    if not 0 < level < 1:
        raise ValueError(f"seed_query_test: level must be in (0, 1), got {level}")
    keep = np.isfinite(m).all(axis=0) & np.isfinite(b).all(axis=0)
    m, b = m[:, keep], b[:, keep]
    n = m.shape[1]
    if n < 2:
        return None
    per_query = m.mean(axis=0) - b.mean(axis=0)
    diff = float(per_query.mean())
    query_var = float(per_query.var(ddof=1)) / n
    parts = [_seed_part(m - b)] if m.shape[0] == b.shape[0] else [_seed_part(m), _seed_part(b)]
    var = query_var + sum(v for v, _ in parts)
    if _constant(per_query) and all(v == 0 for v, _ in parts):
        scale = max(1.0, float(np.abs(m).max()), float(np.abs(b).max()))
        if abs(diff) <= 1e-12 * scale:  # equal up to float noise (e.g. 1e-17): no difference
            return SeedQueryTest(0.0, 0.0, float("inf"), 0.0, 0.0, 1.0, n, int(m.shape[0]))
        return SeedQueryTest(diff, 0.0, float("inf"), diff, diff, 0.0, n, int(m.shape[0]))
    denom = query_var**2 / (n - 1) + sum(v**2 / d for v, d in parts)
    df = var**2 / denom if denom > 0 else float(n - 1)
    from scipy import stats

    se = math.sqrt(var)
    p = float(2 * stats.t.sf(abs(diff) / se, df))
    half = float(stats.t.ppf(0.5 + level / 2, df)) * se
    return SeedQueryTest(diff, se, df, diff - half, diff + half, p, n, int(m.shape[0]))


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
    """Minimal detectable effect of the test over queries × seeds whose standard error is
    ``se`` with ``df`` degrees of freedom (``None`` or infinite: normal quantiles), two-sided
    at level ``alpha / n_compared`` with the given power."""
    q_a, q_b = 1 - alpha / (2 * max(1, n_compared)), power
    if df is None or not math.isfinite(df):
        return (z_quantile(q_a) + z_quantile(q_b)) * se
    from scipy import stats

    return float(stats.t.ppf(q_a, df) + stats.t.ppf(q_b, df)) * se


def sign_test(plus: int, minus: int) -> float:
    """Exact two-sided sign test: ``P`` of a split at least as uneven as ``plus``/``minus``
    under Binomial(plus + minus, ½); 1 when there is nothing to test."""
    n = plus + minus
    if n == 0:
        return 1.0
    k = min(plus, minus)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)
