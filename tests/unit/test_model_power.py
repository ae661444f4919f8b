"""pipeline.model_power: the MDE the report's own test detects with 80% power, found by
simulation, and the equivalence test of the F/M balance (issue 40), each checked by an
independent simulation at the report's level α = 0.05/27 (10,000 runs per case)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from pipeline.model_power import equivalence_interval, simulated_mde, tost_rejects
from pipeline.model_test import design, model_query_test, p_values, variance_df
from tests.unit.test_model_test import committed_components

S, N = 3, 117
FOLDS = np.tile(np.arange(N) % 2, (S, 1))  # the default: 3 seeds × 2 folds, 117 queries
ALPHA = 0.05 / 27
RUNS = 10_000
MARGIN = 0.05
# (σ²_model, σ²_query, σ²_residual) of the paired differences: as the committed default's
# report fitted them (metrics/comparison.csv's `var_*` columns, the median over the compared
# methods, read at test time: `committed_components`), the medians of the 2026-11-28
# reproduction (tests/unit/test_model_test.py), the male-wins case also with the query
# variance the issue measured (0.074), and a model part that dominates (where the bounded df
# costs the most power).
CASES = {
    **{f"{m} as committed": v for m, v in committed_components().items()},
    "MRR@10": (6.818e-05, 1.2276e-04, 7.1736e-03),
    "NFaiRR@10": (1.0859e-06, 5.2098e-04, 1.4224e-03),
    "gap-male-wins": (1.701e-03, 5.645e-03, 7.7745e-02),
    "gap-male-wins, query variance 0.074": (1.701e-03, 0.074, 7.7745e-02),
    "model part 60%": (2.0e-03, 5.0e-04, 1.4e-03),
}


def _draw(rng: np.random.Generator, var: tuple[float, float, float], runs: int) -> np.ndarray:
    """``runs × S × N`` null differences, drawn here (not by the code under test): one
    normal per model (seed × fold), per query and per cell."""
    sa, sb, se = (math.sqrt(v) for v in var)
    model = rng.normal(0, sa, size=(runs, S, 2))
    cells = np.take_along_axis(model, np.broadcast_to(FOLDS, (runs, S, N)), axis=2)
    return cells + rng.normal(0, sb, size=(runs, 1, N)) + rng.normal(0, se, size=(runs, S, N))


@pytest.mark.parametrize("case", list(CASES))
def test_the_simulated_mde_is_detected_80_percent_of_the_time(case: str) -> None:
    """An independent simulation (another generator, another seed) of the report's test at
    the stated MDE: it rejects 80% ± 5% of the time at α = 0.05/27."""
    mde = simulated_mde(CASES[case], FOLDS, ALPHA)
    x = _draw(np.random.default_rng(20261207), CASES[case], RUNS) + mde
    rate = float(np.mean(p_values(x, design(FOLDS)) < ALPHA))
    assert abs(rate - 0.80) <= 0.05, (case, mde, rate)


def test_the_formula_mde_overstates_the_power() -> None:
    """Issue 40: at the formula's MDE, (t_{df,1−α/2} + t_{df,0.8})·SE from each run's own SE
    and df, the test detects less than 80%; the simulated MDE is larger."""
    var = CASES["gap-male-wins"]
    x = _draw(np.random.default_rng(7), var, RUNS)
    v, df = variance_df(x, design(FOLDS))
    formula = float(np.median((sps.t.ppf(1 - ALPHA / 2, df) + sps.t.ppf(0.8, df)) * np.sqrt(v)))
    rate = float(np.mean(p_values(x + formula, design(FOLDS)) < ALPHA))
    assert rate < 0.78 and simulated_mde(var, FOLDS, ALPHA) > formula


def _balanced(x: np.ndarray) -> np.ndarray:
    """The TOST restated: both one-sided t tests at α reject, with the report's Var̂ and df."""
    var, df = variance_df(x, design(FOLDS))
    mean = x.reshape(x.shape[0], -1).mean(axis=1)
    half = sps.t.ppf(1 - ALPHA, df) * np.sqrt(var)
    return np.asarray((mean - half > -MARGIN) & (mean + half < MARGIN))


@pytest.mark.parametrize(
    "var",
    [
        CASES["gap-male-wins as committed"],
        CASES["gap-male-wins"],
        CASES["gap-male-wins, query variance 0.074"],
        (1e-5, 1e-3, 1e-2),
    ],
)
def test_false_balanced_at_twice_the_margin_is_at_most_5_percent(
    var: tuple[float, float, float],
) -> None:
    """A shift of 2δ = 10 points read as "balanced (within ±5 points)": at most 5% of runs
    (the last case has the noise at which the TOST can establish balance at all)."""
    x = _draw(np.random.default_rng(11), var, RUNS)
    assert float(np.mean(_balanced(x + 2 * MARGIN))) <= 0.05
    assert float(np.mean(_balanced(x - 2 * MARGIN))) <= 0.05
    var_hat, df = variance_df(x, design(FOLDS))
    mean = x.reshape(RUNS, -1).mean(axis=1)
    same = tost_rejects(mean + 2 * MARGIN, var_hat, df, MARGIN, ALPHA)
    assert np.array_equal(same, _balanced(x + 2 * MARGIN))


def test_the_tost_is_at_level_at_the_margin_and_has_power_inside() -> None:
    """Where the noise allows it (SE ≈ 0.007): a true shift of exactly δ is called balanced at
    most at the nominal rate (×1.5 for 10,000 runs), no shift at least 80% of the time."""
    var = (1e-5, 1e-3, 1e-2)
    x = _draw(np.random.default_rng(12), var, RUNS)
    assert float(np.mean(_balanced(x + MARGIN))) <= 1.5 * ALPHA
    assert float(np.mean(_balanced(x))) >= 0.8


def test_the_equivalence_interval_from_a_comparison_row_is_the_tost() -> None:
    """What the verdict reads from comparison.csv (estimate, Bonferroni-level interval, SE,
    df) gives the TOST at the report's level: ``est ∓ t_{df,1−α}·se``."""
    rng = np.random.default_rng(3)
    x = _draw(rng, (1e-5, 1e-3, 1e-2), 1)[0] + 0.02
    test = model_query_test(x, 0.0, FOLDS)
    assert test is not None
    low, high = test.interval(1 - ALPHA)
    got = equivalence_interval(test.diff, low, high, test.se, test.df)
    half = sps.t.ppf(1 - ALPHA, test.df) * test.se
    assert got == pytest.approx((test.diff - half, test.diff + half), rel=1e-9)


def test_the_equivalence_interval_by_hand() -> None:
    """Normal case (no df): a = 0.05/27, z_{1−a} = 2.9024, z_{1−a/2} = 3.1130 (the standard
    library's NormalDist). With SE 0.0165 the two-sided interval reaches ±0.0514 but the
    TOST's ±0.0479: balanced within ±5 points; without an SE only the (conservative)
    two-sided interval is left."""
    se = 0.0165
    half = sps.norm.ppf(1 - ALPHA / 2) * se
    assert half == pytest.approx(3.1130 * se, abs=1e-6)
    low, high = equivalence_interval(0.0, -half, half, se, None)
    assert (low, high) == pytest.approx((-2.9024 * se, 2.9024 * se), abs=1e-6)
    assert high < MARGIN < half
    assert equivalence_interval(0.0, -half, half, None, None) == (-half, half)
    assert equivalence_interval(0.01, 0.01, 0.01, 0.0, None) == (0.01, 0.01)
