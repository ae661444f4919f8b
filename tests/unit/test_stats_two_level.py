"""pipeline.stats: the comparison over queries × seeds, the MDE and the sign test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from pipeline.stats import mde, seed_query_test, sign_test


def test_one_seed_is_the_paired_t_test() -> None:
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 1, size=(1, 40))
    method = base + rng.normal(0.05, 0.2, size=(1, 40))
    got = seed_query_test(method, base)
    assert got is not None and got.n_seeds == 1 and got.n_queries == 40
    ref = sps.ttest_rel(method[0], base[0])
    assert got.p == pytest.approx(ref.pvalue, rel=1e-12)
    assert got.df == pytest.approx(39)
    low, high = ref.confidence_interval(0.95)
    assert (got.low, got.high) == pytest.approx((low, high), rel=1e-12)


def test_variance_components_by_hand() -> None:
    """d = seed offsets (−1, 0, +1) + query offsets (0, 2) and no interaction: s²_q of the
    query means (0, 2) is 2, so the query part is 2/2 = 1; the seed means −1, 0, 1 have
    variance 1 and MS_e = 0, so the seed part is 1/3. se² = 4/3, df by Satterthwaite
    (4/3)² / (1²/1 + (1/3)²/2) = 32/19."""
    d = np.array([[-1.0, 1.0], [0.0, 2.0], [1.0, 3.0]])
    got = seed_query_test(d, np.zeros_like(d))
    assert got is not None
    assert got.diff == pytest.approx(1.0)
    assert got.se == pytest.approx(math.sqrt(4 / 3))
    assert got.df == pytest.approx(32 / 19)
    assert got.p == pytest.approx(2 * sps.t.sf(1 / math.sqrt(4 / 3), 32 / 19))


def test_seed_noise_widens_the_interval() -> None:
    """Each seed shifts every query of the method by its own offset (training noise): the
    interval is wider than the query-only interval of the seed means."""
    rng = np.random.default_rng(2)
    base = np.tile(rng.uniform(0, 1, size=200), (3, 1))
    method = base + rng.normal(0, 0.02, size=(3, 200)) + np.array([[-0.05], [0.0], [0.06]])
    two = seed_query_test(method, base)
    one = seed_query_test(method.mean(axis=0, keepdims=True), base[:1])
    assert two is not None and one is not None
    assert two.diff == pytest.approx(one.diff)
    assert two.high - two.low > 3 * (one.high - one.low)
    wide = two.interval(1 - 0.05 / 20)
    assert wide[0] < two.low < two.high < wide[1]


def test_unpaired_seed_counts_add_each_sides_seed_part() -> None:
    rng = np.random.default_rng(5)
    q = rng.uniform(0, 1, size=50)
    method = q + np.array([[-0.1], [0.0], [0.1]])  # seed part: var(−.1, 0, .1)/3 = 0.01/3
    base = q[None, :]  # one deterministic run (zero-shot)
    got = seed_query_test(method, base)
    assert got is not None and got.n_seeds == 3
    assert got.se == pytest.approx(math.sqrt(0.01 / 3))


def test_constant_shift_and_no_difference() -> None:
    base = np.random.default_rng(3).uniform(0, 1, size=(3, 50))
    shifted = seed_query_test(base + 0.1, base)
    assert shifted is not None and shifted.p == 0.0 and shifted.se == 0.0
    assert shifted.low == shifted.high == pytest.approx(0.1)
    same = seed_query_test(base, base)
    assert same is not None and same.p == 1.0 and same.diff == 0.0


def test_missing_values_drop_the_query_and_shapes_are_checked() -> None:
    base = np.zeros((2, 4))
    method = np.array([[1.0, np.nan, 2.0, 1.5], [1.0, 1.0, 2.0, 1.5]])
    got = seed_query_test(method, base)
    assert got is not None and got.n_queries == 3
    assert got.diff == pytest.approx(1.5)
    assert seed_query_test(np.full((1, 2), np.nan), np.ones((1, 2))) is None
    with pytest.raises(ValueError, match="not query-aligned"):
        seed_query_test(np.ones((1, 3)), np.ones((1, 4)))


def test_false_positive_rate_under_the_null_with_seed_effects() -> None:
    """No true difference, queries and seeds both noisy: the seed × query test rejects about
    5%; a query-only test on the seed means rejects far more often (it ignores seed noise)."""
    rng = np.random.default_rng(4)
    rejected_two, rejected_one = 0, 0
    trials = 400
    for _ in range(trials):
        q = rng.uniform(0, 1, size=60)
        base = q + rng.normal(0, 0.05, size=(3, 1)) + rng.normal(0, 0.01, size=(3, 60))
        method = q + rng.normal(0, 0.05, size=(3, 1)) + rng.normal(0, 0.01, size=(3, 60))
        two = seed_query_test(method, base)
        one = seed_query_test(method.mean(0, keepdims=True), base.mean(0, keepdims=True))
        assert two is not None and one is not None
        rejected_two += two.p < 0.05
        rejected_one += one.p < 0.05
    assert 0.02 < rejected_two / trials < 0.09
    assert rejected_one / trials > 0.5


def test_mde_by_hand() -> None:
    # (z_0.975 + z_0.8) · 1 / √100 = (1.959964 + 0.841621) / 10
    assert mde(1.0, 100) == pytest.approx(0.2801585, abs=1e-6)
    # Bonferroni over 20 comparisons: z_{1 − 0.05/40} = 3.023341
    assert mde(0.5, 25, n_compared=20) == pytest.approx((3.023341 + 0.841621) * 0.5 / 5, abs=1e-6)
    with pytest.raises(ValueError, match="at least one query"):
        mde(1.0, 0)


def test_sign_test_matches_the_binomial_test() -> None:
    assert sign_test(5, 0) == pytest.approx(2 / 32)
    assert sign_test(0, 0) == 1.0
    assert sign_test(3, 3) == 1.0
    for plus, minus in [(21, 2), (14, 7), (9, 1), (40, 33)]:
        expected = sps.binomtest(plus, plus + minus, 0.5).pvalue
        assert sign_test(plus, minus) == pytest.approx(expected, rel=1e-12)


def test_float_noise_is_no_difference() -> None:
    base = np.full((3, 10), 0.7198)
    got = seed_query_test(base - 1e-17, base)
    assert got is not None and got.diff == 0.0 and got.p == 1.0 and got.low == got.high == 0.0
