"""pipeline.model_test: the comparison whose unit of noise is the trained model (SPEC §4.9,
issue 29), its variance components by hand, and its rejection rate under no difference at
the report's own level, α = 0.05/27, by simulation."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from pipeline.model_test import components, design, model_query_test, p_values

S, N = 3, 117
FOLDS = np.tile(np.arange(N) % 2, (S, 1))  # the default: 2 folds, the same split in each seed
ALPHA = 0.05 / 27  # the report's level: Bonferroni over 27 compared methods
RUNS = 40_000  # per case (100,000 where the rate is near nominal); fixed seeds
COMPARISON = Path(__file__).resolve().parents[2] / "metrics" / "comparison.csv"


def committed_components() -> dict[str, tuple[float, float, float]]:
    """(σ²_model, σ²_query, σ²_residual) of the paired differences method − baseline, fitted
    by the report to the committed default's per-query files (its `var_*` columns of
    metrics/comparison.csv, each comparison's `components`): the median over the compared
    trained methods, per metric. Read at test time, so the cases follow the committed run."""
    frame = pl.read_csv(COMPARISON, infer_schema_length=None)
    rows = frame.filter(pl.col("var_model").is_not_null() & pl.col("metric").is_in(
        ["MRR@10", "NFaiRR@10", "gap-male-wins"]))  # fmt: skip
    out = {}
    for (metric,), part in sorted(rows.group_by("metric"), key=lambda g: str(g[0][0])):
        med = [float(part[c].median()) for c in ("var_model", "var_query", "var_resid")]  # type: ignore[arg-type]
        # an unbiased estimate can fall below 0; a variance to simulate cannot
        out[str(metric)] = (max(med[0], 0.0) + 0.0, max(med[1], 0.0), max(med[2], 0.0))
    return out


COMMITTED = committed_components()
# The threshold model of the male-wins indicator (below) was fitted on 2026-11-28 to these
# components (eval/ of that reproduction, the median of the 27 comparisons); the Gaussian
# cases use the committed ones (`COMMITTED`).
FITTED = {
    "MRR@10": (6.818e-05, 1.2276e-04, 7.1736e-03),
    "NFaiRR@10": (1.0859e-06, 5.2098e-04, 1.4224e-03),
    "gap-male-wins": (1.701e-03, 5.645e-03, 7.7745e-02),
}
# MRR@10 differences are sparse: 4.9% of the 27 × 351 cells differ from the baseline's, by
# these amounts (how many cells), either sign about equally (53% positive).
MRR_STEPS = {0.0111: 9, 0.0238: 10, 0.0333: 13, 0.05: 20, 0.0571: 8, 0.0833: 65, 0.1: 13,
             0.1071: 9, 0.1111: 6, 0.1333: 11, 0.15: 2, 0.1667: 47, 0.1905: 2, 0.25: 54,
             0.3333: 1, 0.5: 88, 0.6667: 44, 0.75: 63, 0.8: 3, 0.875: 1}  # fmt: skip
# The male-wins indicator as a threshold model: y = [η_q + δ_q + u_model + ω_sq + ε > 0],
# η the query's lean (shared by both methods), δ a method's own shift per query, u per model,
# ω per seed and query (shared by the two methods of a seed: the same data draws), ε ~ N(0, 1);
# the two methods draw δ, u, ε independently, so there is no difference. (μ_η, sd η, sd δ,
# sd u, sd ω) fitted so that the differences' components, the baseline's share (0.51), its
# agreement across seeds (82% of queries) and the method/baseline agreement (88%) match.
MALE_LATENT = (0.0042, 6.1387, 0.5825, 0.4678, 1.2714)


def _null(rng: np.random.Generator, var: tuple[float, float, float], runs: int,
          folds: np.ndarray = FOLDS) -> np.ndarray:  # fmt: skip
    """``runs × S × N`` differences with no true effect: model + query + residual noise."""
    sa, sb, se = (math.sqrt(max(v, 0.0)) for v in var)
    model = rng.normal(0, sa, size=(runs, S, int(folds.max()) + 1))
    cells = np.take_along_axis(model, np.broadcast_to(folds, (runs, S, N)), axis=2)
    return cells + rng.normal(0, sb, size=(runs, 1, N)) + rng.normal(0, se, size=(runs, S, N))


def _sparse(rng: np.random.Generator, runs: int) -> np.ndarray:
    """MRR@10-like null differences: 4.9% of the cells move by an observed step, ± at random."""
    steps, counts = np.array(list(MRR_STEPS)), np.array(list(MRR_STEPS.values()))
    on = rng.uniform(size=(runs, S, N)) < 0.049
    size = rng.choice(steps, p=counts / counts.sum(), size=(runs, S, N))
    return on * size * rng.choice([-1.0, 1.0], size=(runs, S, N))


def _male_wins(rng: np.random.Generator, runs: int) -> np.ndarray:
    """Null differences of the male-wins indicator (0/1 per cell), see MALE_LATENT."""
    mu, s_eta, s_delta, s_u, s_omega = MALE_LATENT
    eta = rng.normal(mu, s_eta, size=(runs, 1, N))
    shared = rng.normal(0, s_omega, size=(runs, S, N))
    sides = []
    for _ in range(2):
        u = np.take_along_axis(rng.normal(0, s_u, size=(runs, S, 2)),
                               np.broadcast_to(FOLDS, (runs, S, N)), axis=2)  # fmt: skip
        latent = eta + rng.normal(0, s_delta, size=(runs, 1, N)) + u + shared
        sides.append((latent + rng.normal(size=(runs, S, N)) > 0).astype(float))
    return sides[0] - sides[1]


def _rate(
    case: str, draw: Callable[[np.random.Generator, int], np.ndarray], folds: np.ndarray = FOLDS,
    upper: float | None = 0.05, runs: int = RUNS,
) -> float:  # fmt: skip
    """Rejection rate at ALPHA over ``runs`` null tables (in chunks: bounded memory)."""
    rng = np.random.default_rng([sum(map(ord, case)), 29])  # fixed per case
    d = design(folds)
    rejected = 0
    for start in range(0, runs, 10_000):
        x = draw(rng, min(10_000, runs - start))
        rejected += int((p_values(x, d, upper) < ALPHA).sum())
    return rejected / runs


SPLIT = np.stack([np.random.default_rng(s).permutation(FOLDS[0]) for s in range(S)])
NF = FITTED["NFaiRR@10"]
Draw = Callable[[np.random.Generator, int], np.ndarray]
CASES: dict[str, tuple[Draw, np.ndarray, int]] = {
    "MRR@10 as committed": (lambda r, k: _null(r, COMMITTED["MRR@10"], k), FOLDS, RUNS),
    "NFaiRR@10 as committed": (lambda r, k: _null(r, COMMITTED["NFaiRR@10"], k), FOLDS, RUNS),
    "male-wins as committed": (
        lambda r, k: _null(r, COMMITTED["gap-male-wins"], k), FOLDS, RUNS
    ),
    "MRR@10 as fitted": (lambda r, k: _null(r, FITTED["MRR@10"], k), FOLDS, RUNS),
    "MRR@10 sparse steps": (_sparse, FOLDS, RUNS),
    "NFaiRR@10 as fitted": (lambda r, k: _null(r, NF, k), FOLDS, RUNS),
    "male-wins indicator": (_male_wins, FOLDS, RUNS),
    "no model variance": (lambda r, k: _null(r, (0.0, NF[1], NF[2]), k), FOLDS, RUNS),
    "model part 90%": (lambda r, k: _null(r, (4.6e-4, NF[1], NF[2]), k), FOLDS, 100_000),
    "model part only": (lambda r, k: _null(r, (1e-2, NF[1], NF[2]), k), FOLDS, 100_000),
    "split per seed": (lambda r, k: _null(r, (1.23e-4, NF[1], NF[2]), k, SPLIT), SPLIT, 100_000),
}


@pytest.mark.parametrize("case", list(CASES))
def test_false_positive_rate_at_the_reports_level(case: str) -> None:
    """Under no difference the test rejects at most 1.2 × α at α = 0.05/27, the level the
    report uses, in 40,000 simulated runs per case (100,000 where the model part dominates):
    variance components as fitted to the default run (MRR@10 also as its sparse steps; the
    male-wins indicator as 0/1 values), without and with a large model component, and a fold
    split that varies with the seed. The runs are seeded, so each rate is one fixed number
    (measured: 0.04, 0.00, 0.42, 0.23, 0.35, 0.97, 1.06, 0.90 × α). Where the model part dominates
    the test is at nominal (1.03, 0.91 and 0.75 × α in 300,000 runs each), and the margin 1.2
    is 3 standard deviations of a 100,000-run rate there, so another seed would pass too; the
    fitted cases are far below (6 models leave 4 df for the model variance: conservative)."""
    draw, folds, runs = CASES[case]
    assert _rate(case, draw, folds, runs=runs) <= 1.2 * ALPHA


def test_plain_satterthwaite_would_fail_the_same_check() -> None:
    """Without the upper confidence limit on the model mean square (plain Satterthwaite on
    the same estimate) the check above fails where the model part dominates: 3.2 × α."""
    draw, folds, _ = CASES["model part 90%"]
    assert _rate("model part 90%", draw, folds, upper=None) > 1.5 * ALPHA


def test_the_simulated_indicator_has_the_fitted_components() -> None:
    """The male-wins generator reproduces the components fitted to the default run."""
    x = _male_wins(np.random.default_rng(1), 2000)
    got = components(x, design(FOLDS)).mean(axis=0)
    assert got == pytest.approx(FITTED["gap-male-wins"], rel=0.35)
    assert float(np.abs(x).mean()) == pytest.approx(0.1, abs=0.03)  # method ≠ baseline in ~10%


def test_balanced_design_is_the_two_way_anova_by_hand() -> None:
    """2 folds of 3 queries, 2 seeds: within each fold a balanced seeds × queries table, so
    Var̂(x̄) = (MS_model + MS_query − MS_e) / (n·S) with the mean squares pooled over the
    folds (model: the seeds' means about their fold's, df F·(S − 1); query: the queries'
    seed means about their fold's, df n − F; residual, df F·(S − 1)·(n_f − 1)), and the df
    are Satterthwaite's with MS_model × df_m / χ²_{df_m, 0.05}."""
    x = np.array([[0.3, 0.1, 0.5, -0.2, 0.0, 0.4], [0.6, 0.2, 0.7, 0.1, -0.3, 0.2]])
    folds = np.array([[0, 0, 0, 1, 1, 1]] * 2)
    s, n, f, nf = 2, 6, 2, 3
    blocks = [x[:, :3], x[:, 3:]]
    ms_model = sum(nf * ((b.mean(1) - b.mean()) ** 2).sum() for b in blocks) / (f * (s - 1))
    ms_query = sum(s * ((b.mean(0) - b.mean()) ** 2).sum() for b in blocks) / (n - f)
    resid = [b - b.mean(1, keepdims=True) - b.mean(0, keepdims=True) + b.mean() for b in blocks]
    ms_e = sum((r**2).sum() for r in resid) / (f * (s - 1) * (nf - 1))
    var = (ms_model + ms_query - ms_e) / (n * s)
    kappa = 2 / sps.chi2.ppf(0.05, 2)
    parts = np.array([kappa * ms_model, ms_query, -ms_e]) / (n * s)
    df = (var + (kappa - 1) * ms_model / (n * s)) ** 2 / (parts**2 / [2, 4, 4]).sum()
    got = model_query_test(x, 0.0, folds)
    assert got is not None and got.n_models == 4 and got.models_in_se
    assert got.diff == pytest.approx(x.mean())
    assert got.se == pytest.approx(math.sqrt(var))
    assert got.df == pytest.approx(df)
    assert got.p == pytest.approx(2 * sps.t.sf(abs(x.mean()) / math.sqrt(var), df))
    lo, hi = got.interval(0.95)
    assert hi - lo == pytest.approx(2 * sps.t.ppf(0.975, df) * math.sqrt(var))


def test_one_seed_is_the_paired_t_test() -> None:
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 1, size=(1, 40))
    method = base + rng.normal(0.05, 0.2, size=(1, 40))
    got = model_query_test(method, base, np.arange(40)[None] % 2)
    assert got is not None and got.n_seeds == 1 and not got.models_in_se
    ref = sps.ttest_rel(method[0], base[0])
    assert got.p == pytest.approx(ref.pvalue, rel=1e-12) and got.df == 39
    assert got.interval(0.95) == pytest.approx(ref.confidence_interval(0.95), rel=1e-12)


def test_the_estimate_of_the_variance_is_unbiased_and_keeps_the_model_part() -> None:
    """Over many tables the mean of Var̂ is the true Var(x̄) = σ²_a Σn_k²/N² + σ²_b/n + σ²_e/N,
    with or without a model component; the old test's seed part could vanish."""
    rng = np.random.default_rng(7)
    d = design(FOLDS)
    weights = np.bincount(FOLDS[0])  # queries per fold: 59, 58 → n_k of each model
    for var in [(0.0, 0.01, 0.02), (0.004, 0.01, 0.02), (0.02, 0.0, 0.001)]:
        x = _null(rng, var, 4000)
        truth = var[0] * S * (weights**2).sum() / (S * N) ** 2 + var[1] / N + var[2] / (S * N)
        from pipeline.model_test import variance_df

        est, df = variance_df(x, d)
        assert est.mean() == pytest.approx(truth, rel=0.05)
        assert float(np.median(df)) < 30 if var[0] > 0.01 else True
        comps = components(x, d).mean(axis=0)
        assert comps == pytest.approx(var, abs=2e-4 + 0.05 * max(var))


def test_constant_identical_and_missing_values() -> None:
    base = np.random.default_rng(3).uniform(0, 1, size=(3, 50))
    shifted = model_query_test(base + 0.1, base)
    assert shifted is not None and shifted.p == 0.0 and shifted.se == 0.0
    assert shifted.interval(0.99) == pytest.approx((0.1, 0.1))
    same = model_query_test(base, base)
    assert same is not None and same.p == 1.0 and same.diff == 0.0
    noise = model_query_test(base - 1e-17, base)
    assert noise is not None and noise.diff == 0.0 and noise.p == 1.0
    method = base.copy()
    method[1, 4] = np.nan
    got = model_query_test(method, base)
    assert got is not None and got.n_queries == 49
    assert model_query_test(np.full((3, 2), np.nan), base[:, :2]) is None
    with pytest.raises(ValueError, match="not seed × query aligned"):
        model_query_test(np.ones((3, 4)), np.ones((2, 4)))


def test_a_deterministic_reference_is_the_same_for_every_seed() -> None:
    """The untrained model (one run) against 3 seeds: its row is broadcast, so the model
    component comes from the trained side only."""
    rng = np.random.default_rng(5)
    q = rng.uniform(0, 1, size=60)
    method = q + np.array([[-0.1], [0.0], [0.1]]) + rng.normal(0, 0.01, size=(3, 60))
    got = model_query_test(method, q[None, :])
    assert got is not None and got.n_models == 3 and got.models_in_se
    one_model = model_query_test(method.mean(0, keepdims=True), q[None, :])
    assert one_model is not None and got.se > 5 * one_model.se
