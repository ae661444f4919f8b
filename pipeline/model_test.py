"""The comparison whose unit of noise is the trained model (SPEC §4.9 "Unit of replication";
issue 29).

Data: a ``seeds × queries`` table ``x[s, q]`` (the paired differences method − baseline of
the same seed's models, or one method's values minus a fixed point such as ½) and the fold
of every cell, ``fold[s, q]``: query q of seed s is scored by model ``k = (s, fold[s, q])``.
With 3 seeds × 2 folds there are 6 models, and the 3 models of a fold share its queries.
The model is crossed random effects

    x[s, q] = μ + a_k + b_q + e_sq,    a_k ~ (0, σ²_a), b_q ~ (0, σ²_b), e ~ (0, σ²_e),

and the estimate is the grand mean x̄ (N = S·n cells, n_k of them scored by model k) with

    Var(x̄) = σ²_a · Σ_k n_k² / N² + σ²_b / n + σ²_e / N.

It is estimated without bias from three quadratic forms of the additive fit (Henderson's
method 3; Searle, Casella & McCulloch 1992, "Variance Components", §5.5): ``Q_a``, the models
adjusted for the queries (df (S − 1)·F with a fixed split: only models that scored the same
queries can be told apart from them), ``Q_b``, the queries adjusted for the models
(df n − F), and the residual ``Q_e``. Their expectations are ``C·(σ²_a, σ²_b, σ²_e)`` with
C from traces of the design (``design``), so ``Var̂ = λ·Q`` with ``λ = C⁻ᵀ·c``. No component
is truncated at zero (the test this replaces did: its seed part hit 0 in 13 of 27 NFaiRR
comparisons and its df then jumped to n − 1); Var̂ is only floored at the residual's share
``MS_e / N``, below which the variance of a mean cannot go.

Degrees of freedom: Satterthwaite (1946), but with the model mean square at its one-sided
95% upper confidence limit ``Q_a / χ²_{df_a, 0.05}`` (a factor 5.6 at df_a = 4). ``Q_a`` has
few df, and when it comes out small by chance plain Satterthwaite both shrinks the standard
error and grows the df: at α = 0.05/27 it then rejects a true null up to 3.4× as often as
nominal (a numerical integral over the χ²_4 draw, docs/decisions.md). With the bound the
rejection rate stays at or below nominal whatever the model share, and the simulation in
``tests/unit/test_model_test.py`` checks it at the report's level with variance components
fitted to the default run. One seed (or one model per query): the model effect cannot be
told from the queries' and the test is the paired t-test over queries (the report says that
training noise is then not in the intervals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pipeline.errors import InputError

UPPER = 0.05
"""The model mean square enters the df at its one-sided (1 − UPPER) upper confidence limit."""
TOLERANCE = 1e-12


@dataclass(frozen=True)
class Design:
    """The layout of a ``seeds × queries`` table: which model scored each cell, and the
    coefficients that turn the three quadratic forms into ``Var̂(x̄)`` (``lam``) with their
    degrees of freedom (``df``: models | queries, queries | models, residual)."""

    n_seeds: int
    n_queries: int
    n_models: int
    indicators: np.ndarray  # (N, K) 0/1: the model of each cell (seed-major)
    basis: np.ndarray  # (N, r): orthonormal basis of the query-centred model indicators
    coef: np.ndarray  # (3, 3): E[Q] = coef · (σ²_a, σ²_b, σ²_e)
    lam: np.ndarray  # (3,)
    df: np.ndarray  # (3,)

    @property
    def estimable(self) -> bool:
        """Whether the model component can be told from the queries' (two seeds or more)."""
        return bool(self.df[0] > 0 and self.df[2] > 0)

    @property
    def kappa(self) -> float:
        """The factor that puts the model mean square at its upper confidence limit."""
        from scipy import stats

        dfa = float(self.df[0])
        return dfa / float(stats.chi2.ppf(UPPER, dfa))


def design(fold: np.ndarray) -> Design:
    """The design of a ``seeds × queries`` table whose cell ``(s, q)`` was scored by the
    model ``(s, fold[s, q])`` (``fold`` integer, same shape as the table)."""
    folds = np.asarray(fold)
    if folds.ndim != 2 or folds.size == 0:
        raise InputError(f"design: expected a seeds × queries array of folds, got {folds.shape}")
    return _design(folds.shape, folds.astype(np.int64).tobytes())


@lru_cache(maxsize=64)
def _design(shape: tuple[int, int], folds: bytes) -> Design:
    s, n = shape
    big_n = s * n
    seed = np.repeat(np.arange(s), n)
    fold = np.frombuffer(folds, dtype=np.int64)
    _, cell = np.unique(np.stack([seed, fold], axis=1), axis=0, return_inverse=True)
    cell = cell.ravel()
    k = int(cell.max()) + 1
    za = np.zeros((big_n, k))
    za[np.arange(big_n), cell] = 1.0
    by_query = za.reshape(s, n, k).mean(axis=0)  # each query's share of each model
    centred = za - np.tile(by_query, (s, 1))
    u, sv, _ = np.linalg.svd(centred, full_matrices=False)
    r = int((sv > 1e-9 * max(1.0, float(sv.max(initial=0.0)))).sum())
    basis = u[:, :r]
    t_a = float(((basis.T @ za) ** 2).sum())  # tr(P_t Z_a Z_aᵀ)
    t_b = float((basis.reshape(s, n, r).sum(axis=0) ** 2).sum())  # tr(P_t Z_b Z_bᵀ) (≈ 0)
    p_a = s * float((by_query**2).sum())  # tr(P_b Z_a Z_aᵀ)
    df = np.array([r, n + r - k, big_n - n - r], dtype=np.float64)
    coef = np.array([
        [t_a, t_b, r],  # Q_a = ‖P_t x‖²
        [p_a + t_a - big_n, big_n + t_b - k, n + r - k],  # Q_b = ‖(P_b + P_t − P_a) x‖²
        [big_n - p_a - t_a, -t_b, big_n - n - r],  # Q_e = ‖(I − P_b − P_t) x‖²
    ])  # fmt: skip
    target = np.array([float((za.sum(axis=0) ** 2).sum()) / big_n**2, 1.0 / n, 1.0 / big_n])
    lam = np.zeros(3)
    if r > 0 and df[2] > 0:
        lam = np.linalg.solve(coef.T, target)
    return Design(s, n, k, za, basis, coef, lam, df)


def forms(x: np.ndarray, d: Design) -> np.ndarray:
    """``(R, 3)`` quadratic forms ``Q_a, Q_b, Q_e`` of ``R`` tables ``x`` (``R × S × n``)."""
    r = x.shape[0]
    query_means = x.mean(axis=1)
    y = (x - query_means[:, None, :]).reshape(r, -1)
    q_a = ((y @ d.basis) ** 2).sum(axis=1)
    q_e = np.maximum((y**2).sum(axis=1) - q_a, 0.0)
    n_k = d.indicators.sum(axis=0)
    model_means = (x.reshape(r, -1) @ d.indicators) / n_k
    q_b = d.n_seeds * (query_means**2).sum(axis=1) + q_a - (n_k * model_means**2).sum(axis=1)
    return np.stack([q_a, np.maximum(q_b, 0.0), q_e], axis=1)


def components(x: np.ndarray, d: Design) -> np.ndarray:
    """``(R, 3)`` unbiased estimates of ``σ²_a, σ²_b, σ²_e`` (method of moments, not clipped
    at zero) of ``R`` tables: what the calibration simulates, fitted to the real runs."""
    if not d.estimable:
        raise InputError("components: the model effect is not estimable (one seed?)")
    return np.asarray(np.linalg.solve(d.coef, forms(x, d).T).T)


def variance_df(
    x: np.ndarray, d: Design, upper: float | None = UPPER
) -> tuple[np.ndarray, np.ndarray]:
    """``(Var̂(x̄), df)`` of each of ``R`` tables (``R × S × n``): see the module docstring;
    without a model component (one seed), the paired t-test's ``s²/n`` and ``n − 1``.
    ``upper`` null: plain Satterthwaite (anti-conservative; kept to show why)."""
    n = d.n_queries
    if not d.estimable:
        per_query = x.mean(axis=1)
        var = per_query.var(axis=1, ddof=1) / n if n > 1 else np.full(x.shape[0], np.nan)
        return var, np.full(x.shape[0], float(n - 1))
    q = forms(x, d)
    parts = q * d.lam
    floor = q[:, 2] / d.df[2] / (d.n_seeds * n)
    var = np.maximum(parts.sum(axis=1), floor)
    kappa = 1.0 if upper is None else d.kappa
    bound = var + (kappa - 1.0) * parts[:, 0]
    denom = (kappa * parts[:, 0]) ** 2 / d.df[0] + (parts[:, 1:] ** 2 / d.df[1:]).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(denom > 0, bound**2 / denom, np.inf)
    return var, np.minimum(df, d.df.sum())


def p_values(x: np.ndarray, d: Design, upper: float | None = UPPER) -> np.ndarray:
    """Two-sided p of ``x̄ = 0`` for each of ``R`` tables (vectorised: the calibration test)."""
    from scipy import stats

    var, df = variance_df(x, d, upper)
    mean = x.reshape(x.shape[0], -1).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(mean) / np.sqrt(var)
    p = 2 * stats.t.sf(t, df)
    zero = var <= 0
    return np.where(zero, np.where(np.abs(mean) <= TOLERANCE, 1.0, 0.0), p)


@dataclass(frozen=True)
class ModelTest:
    """One comparison: the mean difference, its standard error and df, the two-sided p and
    the design (queries, seeds, models; ``models_in_se``: whether the model component is in
    the standard error; ``components``: the fitted ``σ²_model, σ²_query, σ²_residual``
    where the model component is estimable, what ``pipeline.model_power`` simulates)."""

    diff: float
    se: float
    df: float
    p: float
    n_queries: int
    n_seeds: int
    n_models: int
    models_in_se: bool
    components: tuple[float, float, float] | None = None

    def interval(self, level: float) -> tuple[float, float]:
        """The t interval of ``diff`` at ``level`` (e.g. the Bonferroni level 1 − α/m)."""
        if not 0 < level < 1:
            raise InputError(f"interval: level must be in (0, 1), got {level}")
        if self.se == 0:
            return self.diff, self.diff
        from scipy import stats

        half = float(stats.t.ppf(0.5 + level / 2, self.df)) * self.se
        return self.diff - half, self.diff + half


def model_query_test(
    method: np.ndarray, base: np.ndarray | float = 0.0, fold: np.ndarray | None = None
) -> ModelTest | None:
    """Test ``method − base`` with the trained model as the unit of noise.

    ``method``: ``seeds × queries``; ``base``: the same shape (seed s of both trained on the
    same draws: paired), one row (a deterministic reference such as the untrained model,
    broadcast over the seeds) or a number (e.g. ½: is a share balanced?). ``fold``: the fold
    of each cell (``seeds × queries``; one row is broadcast; ``None``: one model per seed).
    A query with a NaN in any seed on either side is dropped; null when fewer than two
    queries are left.
    """
    m = np.atleast_2d(np.asarray(method, dtype=np.float64))
    b = np.atleast_2d(np.asarray(base, dtype=np.float64))
    if b.shape[1] not in (1, m.shape[1]) or b.shape[0] not in (1, m.shape[0]):
        raise InputError(f"model_query_test: {m.shape} and {b.shape} are not seed × query aligned")
    f = np.zeros(m.shape, dtype=np.int64) if fold is None else np.broadcast_to(fold, m.shape)
    x = m - b
    keep = np.isfinite(x).all(axis=0)
    x, f = x[:, keep], f[:, keep]
    s, n = x.shape
    if n < 2:
        return None
    d = design(f)
    diff = float(x.mean())
    scale = max(1.0, float(np.nanmax(np.abs(m))), float(np.nanmax(np.abs(b))))
    if float(np.ptp(x)) <= TOLERANCE * scale:  # every cell the same difference
        diff = 0.0 if abs(diff) <= TOLERANCE * scale else diff
        return ModelTest(diff, 0.0, math.inf, 1.0 if diff == 0 else 0.0, n, s, d.n_models,
                         d.estimable)  # fmt: skip
    from scipy import stats

    var, df = variance_df(x[None], d)
    se = math.sqrt(float(var[0]))
    p = float(2 * stats.t.sf(abs(diff) / se, df[0])) if se > 0 else 0.0
    c = components(x[None], d)[0] if d.estimable else None
    parts = None if c is None else (float(c[0]), float(c[1]), float(c[2]))
    return ModelTest(diff, se, float(df[0]), p, n, s, d.n_models, d.estimable, parts)
