"""Comparison with the baseline: % change, paired t-test, Bonferroni, seeds (SPEC §4.8)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats

from pipeline.model_test import model_query_test
from pipeline.report.significance import (
    bonferroni,
    change_pct,
    compare,
    mean_std,
    paired_ttest,
    query_means,
    seed_matrix,
)

QIDS = [f"q{i}" for i in range(8)]
A = [0.2, 0.4, 0.6, 0.8, 0.2, 0.4, 0.6, 0.8]  # mean 0.5
NOISE = [0.01, -0.01] * 4  # sums to 0


def _frame(values: Sequence[float | None], qids: list[str] = QIDS) -> pl.DataFrame:
    return pl.DataFrame(
        {"query_id": qids, "MRR@10": values}, schema={"query_id": pl.Utf8, "MRR@10": pl.Float64}
    )


def _get(cmp: pl.DataFrame, method: str, metric: str = "MRR@10") -> dict[str, Any]:
    return cmp.filter((pl.col("method") == method) & (pl.col("metric") == metric)).row(
        0, named=True
    )


def test_known_difference_is_marked_identical_pair_is_not() -> None:
    b = [a + 0.1 + e for a, e in zip(A, NOISE, strict=True)]  # mean 0.6
    cmp = compare({"A": _frame(A), "B": _frame(b), "same": _frame(A)}, baseline="A")
    row_b, row_same = _get(cmp, "B"), _get(cmp, "same")
    assert row_b["change_pct"] == pytest.approx(100 * (0.6 - 0.5) / 0.5)  # +20 %
    # d = 0.1 ± 0.01 alternating: sd = 0.01·sqrt(8/7), t = 0.1 / (sd / sqrt 8) = 10·sqrt 7
    assert row_b["diff"] / row_b["se"] == pytest.approx(10 * math.sqrt(7))
    assert row_b["df"] == pytest.approx(7)  # one seed: the paired t-test
    assert row_b["p"] == pytest.approx(2 * stats.t.sf(10 * math.sqrt(7), df=7))
    assert row_b["p_adjusted"] == pytest.approx(2 * row_b["p"])  # two compared methods
    assert row_b["significant"] is True and row_b["n_pairs"] == 8
    assert row_same["change_pct"] == 0.0 and row_same["p"] == 1.0
    assert row_same["significant"] is False
    base = _get(cmp, "A")
    assert base["mean"] == pytest.approx(0.5) and base["change_pct"] is None and base["p"] is None


def test_bonferroni_multiplies_by_the_number_of_compared_methods_and_caps_at_one() -> None:
    assert bonferroni(0.02, 3) == pytest.approx(0.06)
    assert bonferroni(0.5, 3) == 1.0
    assert bonferroni(None, 3) is None
    # a difference with raw p in (0.05/3, 0.05): significant alone, not among three methods
    d = [0.1, -0.02, 0.08, 0.02, 0.06, 0.0, 0.04, 0.01]  # t ≈ 2.48, p ≈ 0.042
    n, mean = len(d), sum(d) / len(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    t = mean / (sd / math.sqrt(n))
    p = 2 * stats.t.sf(abs(t), df=n - 1)
    assert 0.05 / 3 < p < 0.05
    other = _frame([a + x for a, x in zip(A, d, strict=True)])
    alone = _get(compare({"A": _frame(A), "B": other}, "A"), "B")
    assert alone["diff"] / alone["se"] == pytest.approx(t)
    assert alone["p_adjusted"] == pytest.approx(p)
    assert alone["significant"] is True
    three = compare({"A": _frame(A), "B": other, "C": _frame(A), "D": _frame(A)}, "A")
    assert _get(three, "B")["p_adjusted"] == pytest.approx(3 * p)
    assert _get(three, "B")["significant"] is False


def test_reference_rows_are_shown_but_not_compared() -> None:
    b = [a + 0.1 + e for a, e in zip(A, NOISE, strict=True)]
    cmp = compare({"bm25": _frame(b), "A": _frame(A), "B": _frame(b)}, "A", reference=["bm25"])
    assert cmp["method"].unique(maintain_order=True).to_list() == ["bm25", "A", "B"]
    assert _get(cmp, "bm25")["p"] is None and _get(cmp, "bm25")["mean"] == pytest.approx(0.6)
    assert _get(cmp, "B")["p_adjusted"] == pytest.approx(_get(cmp, "B")["p"])  # one compared


def test_paired_test_uses_queries_non_null_in_both() -> None:
    base = _frame([0.1, 0.2, 0.3, None, 0.5], QIDS[:5])
    other = _frame([0.3, 0.3, 0.6, 0.9], ["q0", "q1", "q2", "q3"])  # q4 missing, q3 null in base
    test = paired_ttest(base, other, "MRR@10")
    assert test.n == 3
    d = [0.2, 0.1, 0.3]
    t = 0.2 / (0.1 / math.sqrt(3))  # mean 0.2, sd 0.1
    assert test.t == pytest.approx(t) and sum(d) == pytest.approx(0.6)
    assert paired_ttest(base.head(1), other, "MRR@10").p is None  # fewer than two pairs


def test_constant_shift_is_significant_without_scipy_warning() -> None:
    shifted = _frame([a + 0.1 for a in A])
    test = paired_ttest(_frame(A), shifted, "MRR@10")
    assert test.p == 0.0 and test.t is None and test.n == 8


def test_seeds_mean_std_and_test_on_per_query_means() -> None:
    seeds = {
        1: _frame([0.4] * 8),
        2: _frame([0.5] * 8),
        3: _frame([0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, None]),
    }
    assert mean_std([0.4, 0.5, 0.6]) == pytest.approx((0.5, 0.1))
    assert mean_std([0.4]) == (0.4, None)
    means = query_means(seeds, "MRR@10")
    assert means["MRR@10"].to_list() == pytest.approx([0.5] * 7 + [0.45])
    base = {1: _frame(A), 2: _frame([a + 0.02 for a in A])}  # per-query mean A + 0.01
    cmp = compare({"base": base, "S": seeds}, "base")
    s = _get(cmp, "S")
    assert s["mean"] == pytest.approx(0.5) and s["std"] == pytest.approx(0.1) and s["n_seeds"] == 3
    assert _get(cmp, "base")["mean"] == pytest.approx(0.51)
    assert _get(cmp, "base")["std"] == pytest.approx(math.sqrt(2 * 0.01**2))
    assert s["change_pct"] == pytest.approx(100 * (0.5 - 0.51) / 0.51)
    # seeds 1, 2 are paired with the baseline's (the same data draws); seed 3 has no partner
    # and is left out with a warning, so q7 (null only in seed 3) stays in
    ids = QIDS
    expected = model_query_test(seed_matrix({1: seeds[1], 2: seeds[2]}, "MRR@10", ids),
                                seed_matrix(base, "MRR@10", ids))  # fmt: skip
    assert expected is not None and s["n_pairs"] == 8
    assert s["p"] == pytest.approx(expected.p) and s["se"] == pytest.approx(expected.se)


def test_change_pct_uses_the_magnitude_of_the_baseline() -> None:
    assert change_pct(-0.3, -0.2) == pytest.approx(-50.0)
    assert change_pct(0.1, 0.0) is None and change_pct(None, 0.2) is None


def test_unknown_baseline_is_an_error() -> None:
    with pytest.raises(ValueError, match="baseline 'x' has no per-query metrics"):
        compare({"A": _frame(A)}, "x")


def test_query_attributes_are_not_compared() -> None:
    from pipeline.report.significance import metric_columns

    frame = pl.DataFrame(
        {"query_id": ["1"], "MRR@10": [1.0], "var.complexity": [0.4], "var.n_easy": [1]}
    )
    assert metric_columns(frame) == ["MRR@10"]


def test_direction_metrics_count_the_queries_that_moved_and_share_the_model_test() -> None:
    def wins(values: list[float]) -> pl.DataFrame:
        return pl.DataFrame({"query_id": QIDS, "gap-male-wins": [float(v) for v in values]})

    base = wins([0, 0, 0, 0, 0, 0, 1, 1])
    more = {1: wins([1, 1, 1, 1, 1, 0, 1, 0]), 2: wins([1, 1, 1, 1, 0, 0, 1, 0])}
    cmp = compare({"A": base, "B": more}, "A")
    row = _get(cmp, "B", "gap-male-wins")
    # per-query means 1,1,1,1,.5,0,1,0 vs 0,0,0,0,0,0,1,1: 5 above, 1 below, 2 unchanged
    assert (row["sign_plus"], row["sign_minus"]) == (5, 1)
    ids = QIDS
    expected = model_query_test(seed_matrix(more, "gap-male-wins", ids),
                                seed_matrix(base, "gap-male-wins", ids))  # fmt: skip
    assert expected is not None and row["p"] == pytest.approx(expected.p)
    assert _get(cmp, "A", "gap-male-wins")["p"] is None  # the baseline is not tested
    # the balance against ½, on every row: B's share 5.5/8 = 0.6875, A's 2/8
    assert row["target"] == 0.5 and row["target_diff"] == pytest.approx(0.6875 - 0.5)
    assert _get(cmp, "A", "gap-male-wins")["target_diff"] == pytest.approx(0.25 - 0.5)
    assert row["target_low"] < row["target_diff"] < row["target_high"]


def test_the_fold_of_each_query_makes_the_model_the_unit() -> None:
    """Two folds: queries q0-q3 scored by fold 0's model, q4-q7 by fold 1's, in each of 3
    seeds. Each model shifts its queries by its own offset: with the folds given, the test
    sees 6 models (df of the model part 4) and a wider interval than with one model per
    seed, which averages the fold offsets away."""
    rng = np.random.default_rng(3)
    offsets = {1: (0.08, -0.06), 2: (-0.05, 0.07), 3: (0.06, -0.09)}
    method = {s: _frame([a + offsets[s][i // 4] + e for i, (a, e)
                         in enumerate(zip(A, rng.normal(0, 0.01, 8), strict=True))])
              for s in (1, 2, 3)}  # fmt: skip
    base = {s: _frame(A) for s in (1, 2, 3)}
    folds = pl.DataFrame({"query_id": QIDS, "fold": [0, 0, 0, 0, 1, 1, 1, 1]})
    with_folds = _get(compare({"base": base, "m": method}, "base", folds=folds), "m")
    per_seed = _get(compare({"base": base, "m": method}, "base"), "m")
    assert with_folds["n_models"] == 6 and per_seed["n_models"] == 3
    assert with_folds["diff"] == pytest.approx(per_seed["diff"])
    assert with_folds["se"] > 1.5 * per_seed["se"]
    with pytest.raises(ValueError, match=r"folds: 2 queries have no fold for seed 1"):
        compare({"base": base, "m": method}, "base", folds=folds.head(6))
    own = {s: f.with_columns(fold=pl.Series([0, 0, 0, 0, 1, 1, 1, 1])) for s, f in method.items()}
    assert _get(compare({"base": base, "m": own}, "base"), "m")["n_models"] == 6
