"""What the model-unit test (``pipeline.model_test``) can detect and what it can rule out
(issue 40): its power by simulation, and the two one-sided tests of equivalence.

**Power by simulation.** The formula MDE ``(t_{df,1−α/2} + t_{df,0.8})·SE`` treats the
standard error as known; the report's test estimates it from a 4-df model mean square that
it also bounds from above, so at that difference it detects 63–75% of the time, not 80%
(issue 40). :func:`simulated_mde` draws ``runs`` tables of the design (``fold``: seeds ×
queries, the fold model of each cell) from the fitted variance components ``(σ²_model,
σ²_query, σ²_residual)`` of the crossed model (Gaussian; a negative estimate counts as 0),
computes the test's own ``Var̂`` and df on each (both invariant to a constant shift, so one
null draw serves every difference: common random numbers), and finds by bisection the
difference δ whose rejection rate ``P(|x̄₀ + δ| > t_{df,1−α/2}·√Var̂)`` is the power asked.

**Equivalence (TOST).** A share is *balanced within ±δ* only where both one-sided tests
``θ ≤ −δ`` and ``θ ≥ +δ`` reject at level α (Schuirmann 1987), i.e. where the ``1 − 2α``
interval ``θ̂ ∓ t_{df,1−α}·SE`` lies inside ``(−δ, δ)``: not where a test of ``θ = 0`` fails
to reject, which is what a wide interval does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pipeline.errors import InputError
from pipeline.model_test import design, variance_df

POWER = 0.8
RUNS = 10_000
SEED = 0


def null_tables(
    var: Sequence[float], fold: np.ndarray, runs: int, rng: np.random.Generator
) -> np.ndarray:
    """``runs × S × n`` differences without effect: model + query + residual, Gaussian with
    the components ``var`` (negative ones count as 0); ``fold``: seeds × queries."""
    folds = np.asarray(fold, dtype=np.int64)
    s, n = folds.shape
    sa, sb, se = (math.sqrt(max(float(v), 0.0)) for v in var)
    seeds = np.repeat(np.arange(s), n)
    _, cell = np.unique(np.stack([seeds, folds.ravel()], axis=1), axis=0, return_inverse=True)
    cell = cell.ravel()
    model = rng.normal(0.0, sa, size=(runs, int(cell.max()) + 1))
    return (model[:, cell].reshape(runs, s, n) + rng.normal(0.0, sb, size=(runs, 1, n))
            + rng.normal(0.0, se, size=(runs, s, n)))  # fmt: skip


def _critical(x: np.ndarray, fold: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The null means of ``x`` and the test's two-sided critical distance on each table."""
    from scipy import stats

    var, df = variance_df(x, design(fold))
    crit = stats.t.ppf(1 - alpha / 2, df) * np.sqrt(var)
    return x.reshape(x.shape[0], -1).mean(axis=1), crit


def rejection_rate(x: np.ndarray, fold: np.ndarray, shift: float, alpha: float) -> float:
    """How often the model-unit test rejects ``x̄ = 0`` at ``alpha`` on the tables ``x + shift``."""
    mean, crit = _critical(x, fold, alpha)
    return float(np.mean(np.abs(mean + shift) > crit))


def simulated_mde(
    var: Sequence[float], fold: np.ndarray, alpha: float, *, power: float = POWER,
    runs: int = RUNS, seed: int = SEED,
) -> float:  # fmt: skip
    """The difference the report's test detects with ``power`` at level ``alpha`` (two-sided),
    found by simulating ``runs`` tables of the design ``fold`` from the components ``var``."""
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise InputError(f"simulated_mde: power and alpha must be in (0, 1), got {power}, {alpha}")
    mean, crit = _critical(null_tables(var, fold, runs, np.random.default_rng(seed)), fold, alpha)

    def rate(delta: float) -> float:
        return float(np.mean(np.abs(mean + delta) > crit))

    low, high = 0.0, float(np.max(crit) + np.max(np.abs(mean)))
    if not math.isfinite(high) or rate(high) < power:
        raise InputError("simulated_mde: the test never reaches that power on these components")
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if rate(mid) < power else (low, mid)
    return high


def equivalence_interval(
    est: float, low: float, high: float, se: float | None, df: float | None
) -> tuple[float, float]:
    """The TOST interval of ``est`` at the level of its two-sided interval ``[low, high]``:
    that interval has level ``1 − a`` (``a`` = α/m, recovered from its half-width, ``se`` and
    ``df``); the two one-sided tests at ``a`` use ``est ∓ t_{df,1−a}·se`` (the ``1 − 2a``
    interval). Without ``se`` the two-sided interval itself (a TOST at ``a/2``: conservative)."""
    if se is None or not se > 0:
        return (low, high) if se is None else (est, est)
    from scipy import stats

    dist = stats.norm if df is None or not math.isfinite(df) else stats.t(df)
    level = 2 * float(dist.sf((high - low) / 2 / se))
    q = float(dist.ppf(1 - level))
    return est - q * se, est + q * se


def tost_rejects(
    mean: np.ndarray, var: np.ndarray, df: np.ndarray, margin: float, alpha: float
) -> np.ndarray:
    """Vectorised TOST: ``|θ| < margin`` is established where both one-sided t tests at
    ``alpha`` reject (``mean ∓ t_{df,1−α}·√var`` inside ``(−margin, margin)``)."""
    from scipy import stats

    half = stats.t.ppf(1 - alpha, df) * np.sqrt(var)
    return np.asarray((mean - half > -margin) & (mean + half < margin))
