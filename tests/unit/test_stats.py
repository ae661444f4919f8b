"""pipeline.stats: paired bootstrap CI, Holm-Bonferroni, paired t-test, mean ± std."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from scipy import stats as sps

from pipeline.params import ParamsError, parse_params
from pipeline.report.significance import compare
from pipeline.stats import (
    adjust,
    bonferroni,
    bootstrap_ci,
    holm,
    mean_std,
    paired_ttest,
)


def test_constant_difference_gives_a_zero_width_ci_at_that_constant() -> None:
    assert bootstrap_ci([0.25] * 30) == (0.25, 0.25)
    assert bootstrap_ci([-0.1] * 7, n_resamples=100, seed=3) == (-0.1, -0.1)
    assert bootstrap_ci([]) is None


def test_two_differences_give_the_full_range() -> None:
    # d = (0, 1): a resample's mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4, so the
    # 2.5th percentile of 10,000 resample means is 0 and the 97.5th is 1.
    assert bootstrap_ci([0.0, 1.0]) == (0.0, 1.0)


def test_ci_matches_the_normal_approximation_for_many_queries() -> None:
    d = np.random.default_rng(1).normal(0.05, 0.2, size=400)
    low, high = bootstrap_ci(d)  # type: ignore[misc]
    half = 1.959964 * d.std(ddof=0) / math.sqrt(d.size)  # mean ± z·σ/√n
    assert low == pytest.approx(d.mean() - half, abs=0.1 * half)
    assert high == pytest.approx(d.mean() + half, abs=0.1 * half)
    assert low < d.mean() < high


def test_ci_is_seeded_and_level_narrows_it() -> None:
    d = [0.1, -0.2, 0.3, 0.05, 0.0, 0.4, -0.1, 0.2]
    assert bootstrap_ci(d, seed=5) == bootstrap_ci(d, seed=5)
    assert bootstrap_ci(d, seed=5) != bootstrap_ci(d, seed=6)
    wide, narrow = bootstrap_ci(d), bootstrap_ci(d, level=0.5)
    assert wide is not None and narrow is not None
    assert wide[0] < narrow[0] < narrow[1] < wide[1]
    with pytest.raises(ValueError, match="level must be in"):
        bootstrap_ci(d, level=1.5)
    with pytest.raises(ValueError, match="finite differences"):
        bootstrap_ci([0.1, float("nan")])


def test_holm_by_hand() -> None:
    # sorted: 0.01·3 = 0.03; 0.03·2 = 0.06; 0.04·1 = 0.04 → max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # a missing test counts in m (ranked last, as p = 1) and stays missing
    assert holm([0.01, None, 0.04]) == [pytest.approx(0.03), None, pytest.approx(0.08)]
    assert holm([0.5, 0.6]) == [1.0, 1.0]


def test_holm_never_exceeds_bonferroni() -> None:
    p = list(np.random.default_rng(0).uniform(0, 0.1, size=12))
    for h, b in zip(adjust(p, "holm"), adjust(p, "bonferroni"), strict=True):
        assert h is not None and b is not None and h <= b + 1e-15
    assert adjust([0.02, None], "bonferroni") == [pytest.approx(0.04), None]
    assert bonferroni(0.02, 3) == pytest.approx(0.06)
    with pytest.raises(ValueError, match="unknown correction 'sidak'"):
        adjust([0.1], "sidak")


def test_paired_ttest_on_arrays() -> None:
    a, b = [0.1, 0.2, 0.3], [0.3, 0.3, 0.6]  # d = 0.2, 0.1, 0.3: mean 0.2, sd 0.1
    test = paired_ttest(a, b)
    assert test.t == pytest.approx(0.2 / (0.1 / math.sqrt(3))) and test.n == 3
    assert test.p == pytest.approx(sps.ttest_rel(b, a).pvalue)
    assert paired_ttest([0.1], [0.2]).p is None
    assert paired_ttest([0.1, 0.2], [0.1, 0.2]).p == 1.0
    with pytest.raises(ValueError, match="not paired"):
        paired_ttest([0.1, 0.2], [0.1])
    assert mean_std([0.4, 0.5, 0.6]) == pytest.approx((0.5, 0.1))


def test_compare_with_holm_and_the_ci_columns() -> None:
    qids = [f"q{i}" for i in range(8)]
    base = [0.2, 0.4, 0.6, 0.8, 0.2, 0.4, 0.6, 0.8]

    def frame(values: list[float]) -> pl.DataFrame:
        return pl.DataFrame({"query_id": qids, "MRR@10": values})

    d_b = [0.1, -0.02, 0.08, 0.02, 0.06, 0.0, 0.04, 0.01]
    d_c = [0.11, 0.09] * 4
    runs = {
        "A": frame(base),
        "B": frame([x + d for x, d in zip(base, d_b, strict=True)]),
        "C": frame([x + d for x, d in zip(base, d_c, strict=True)]),
        "D": frame(base),
    }
    bonf = compare(runs, "A")
    holm_cmp = compare(runs, "A", correction="holm")
    p = {m: bonf.filter(pl.col("method") == m)["p"][0] for m in "BCD"}
    # D: p = 1; C: smallest p, ×3; B: second, ×2
    assert p["C"] < p["B"] < p["D"] == 1.0
    got = {m: holm_cmp.filter(pl.col("method") == m)["p_adjusted"][0] for m in "BCD"}
    assert got["C"] == pytest.approx(3 * p["C"])
    assert got["B"] == pytest.approx(max(3 * p["C"], 2 * p["B"]))
    assert got["D"] == 1.0
    row = bonf.filter(pl.col("method") == "C").row(0, named=True)
    assert row["diff"] == pytest.approx(0.1)
    assert 0.09 <= row["ci_low"] < 0.1 < row["ci_high"] <= 0.11
    same = bonf.filter(pl.col("method") == "D").row(0, named=True)
    assert same["ci_low"] == same["ci_high"] == 0.0
    assert bonf.filter(pl.col("method") == "A")["ci_low"][0] is None


def test_report_params_are_validated() -> None:
    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text())
    assert parse_params(raw).report.correction in ("bonferroni", "holm")
    raw["report"] = {"correction": "sidak"}
    with pytest.raises(ParamsError, match=r"report\.correction"):
        parse_params(raw)
    raw["report"] = {"bootstrap_samples": 10}
    with pytest.raises(ParamsError, match=r"report\.bootstrap_samples"):
        parse_params(raw)


def test_mde_from_a_tests_se_includes_what_few_seeds_cost() -> None:
    from pipeline.stats import mde, mde_se

    sd, n = 0.04, 117
    assert mde_se(sd / n**0.5, None, 27) == pytest.approx(mde(sd, n, 27))  # normal: the same
    assert mde_se(sd / n**0.5, float("inf"), 27) == pytest.approx(mde(sd, n, 27))
    # a seed part with 2 degrees of freedom (3 seeds): t quantiles, far larger
    assert mde_se(sd / n**0.5, 2.0, 27) > 3 * mde(sd, n, 27)


def test_mde_by_hand() -> None:
    from pipeline.stats import mde

    # (z_0.975 + z_0.8) · 1 / √100 = (1.959964 + 0.841621) / 10
    assert mde(1.0, 100) == pytest.approx(0.2801585, abs=1e-6)
    # Bonferroni over 20 comparisons: z_{1 − 0.05/40} = 3.023341
    assert mde(0.5, 25, n_compared=20) == pytest.approx((3.023341 + 0.841621) * 0.5 / 5, abs=1e-6)
    with pytest.raises(ValueError, match="at least one query"):
        mde(1.0, 0)
