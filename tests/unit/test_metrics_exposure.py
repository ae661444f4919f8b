"""Group exposure (SPEC §4.6): hand-computed 3-document examples."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from pipeline.config import ParamsError
from pipeline.metrics import METRICS, EvalInputs
from pipeline.metrics.awrf import AwrfConfig, AwrfTarget, awrf
from pipeline.metrics.exposure import (
    ExposureConfig,
    expected_exposure,
    exposure,
    exposure_scores,
    ideal_exposure,
    plackett_luce,
    standardise,
    system_exposure,
)
from pipeline.metrics.inputs import intersect, one_hot
from pipeline.ties import fair_discount

D3 = 1 / math.log2(3)  # discount at rank 3; ranks 1 and 2 both discount 1
RUN = pl.DataFrame(
    {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0], "rank": [1, 2, 3]}
)
QRELS = pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
# Two dimensions; c is unknown on both (Unknown is a real group).
DIMS = pl.DataFrame(
    {
        "doc_id": ["a", "a", "a", "b", "b", "c", "c"],
        "dimension": ["gender", "region", "region", "gender", "region", "gender", "region"],
        "group": ["F", "EU", "AS", "M", "EU", "Unknown", "Unknown"],
        "weight": [1.0, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0],
    }
)


def jsd(p: np.ndarray, q: np.ndarray) -> float:
    m = (p + q) / 2
    kl = lambda x: sum(xi * math.log(xi / mi) for xi, mi in zip(x, m, strict=True) if xi > 0)  # noqa: E731
    return 0.5 * kl(p) + 0.5 * kl(q)


def test_discount_and_ideal_exposure_by_hand() -> None:
    assert fair_discount(np.array([1, 2, 3])) == pytest.approx([1, 1, D3])
    # one relevant doc first; the two non-relevant share positions 2 and 3
    assert ideal_exposure(np.array([1.0, 0, 0]), 20) == pytest.approx(
        [1, (1 + D3) / 2, (1 + D3) / 2]
    )
    assert ideal_exposure(np.array([0.0, 1, 1]), 20) == pytest.approx([D3, 1, 1])
    # length 2: position 3 is never shown
    assert ideal_exposure(np.array([1.0, 0, 0]), 2) == pytest.approx([1, 0.5, 0.5])
    # graded: 2 > 1 > 0
    assert ideal_exposure(np.array([1.0, 2, 0]), 20) == pytest.approx([1, 1, D3])


def test_intersectional_alignment_is_the_outer_product() -> None:
    out = intersect(DIMS, ["gender", "region"])
    assert out.rows() == [
        ("a", "gender=F|region=AS", 0.5),
        ("a", "gender=F|region=EU", 0.5),
        ("b", "gender=M|region=EU", 1.0),
        ("c", "gender=Unknown|region=Unknown", 1.0),
    ]
    partial = DIMS.filter(~((pl.col("doc_id") == "b") & (pl.col("dimension") == "region")))
    assert set(intersect(partial)["doc_id"]) == {"a", "c"}


def test_awrf_multi_dimensional_uniform_and_relevant_targets_by_hand() -> None:
    align = intersect(DIMS)
    # run mass per group: a → 1·(.5, .5) on F|AS, F|EU; b → 1 on M|EU; c → D3 on U|U
    p = np.array([0.5, 0.5, 1.0, D3]) / (2 + D3)
    out = awrf(EvalInputs(RUN, QRELS, alignments=align), (3,))
    assert out["AWRF@3"][0] == pytest.approx(1 - jsd(p, np.full(4, 0.25)))
    ndcg = 1.0  # the single relevant doc is at rank 1
    assert out["nDCGxAWRF@3"][0] == pytest.approx(ndcg * out["AWRF@3"][0])
    # relevant target: a's vector mixed 50/50 with the mean vector of a, b, c
    rel = np.array([0.5, 0.5, 0, 0])
    background = np.array([0.5, 0.5, 1, 1]) / 3
    out = awrf(EvalInputs(RUN, QRELS, alignments=align), (1, 3), AwrfConfig(target="relevant"))
    assert out["AWRF@3"][0] == pytest.approx(1 - jsd(p, 0.5 * rel + 0.5 * background))
    assert out["AWRF@1"][0] == pytest.approx(1 - jsd(rel, 0.5 * rel + 0.5 * background))
    assert out["awrf_skipped@1"][0] == 0


def test_awrf_of_labels_is_awrf_of_their_one_hot_alignments() -> None:
    groups = pl.DataFrame({"doc_id": ["a", "b", "c", "d"], "group": ["F", "M", "F", "N"]})
    targets: tuple[AwrfTarget, ...] = ("uniform", "relevant")
    for target in targets:
        cfg = AwrfConfig(target=target)
        ref = awrf(EvalInputs(RUN, QRELS, doc_groups=groups), (2, 3), cfg)
        ctx = EvalInputs(RUN, QRELS, alignments=one_hot(groups))
        assert awrf(ctx, (2, 3), cfg).equals(ref), target


def test_plackett_luce_is_seeded_and_has_the_right_first_position_law() -> None:
    scores = np.log(np.array([3.0, 2.0, 1.0]))
    draws = plackett_luce(scores, 20_000, 2, 1.0, np.random.default_rng(0))
    assert draws.shape == (20_000, 2)
    assert np.all(draws[:, 0] != draws[:, 1])  # without replacement
    first = np.bincount(draws[:, 0], minlength=3) / 20_000
    assert first == pytest.approx([3 / 6, 2 / 6, 1 / 6], abs=0.01)
    # P(second = b | first = a) = 2 / 3
    after_a = draws[draws[:, 0] == 0, 1]
    assert np.mean(after_a == 1) == pytest.approx(2 / 3, abs=0.015)
    again = plackett_luce(scores, 20_000, 2, 1.0, np.random.default_rng(0))
    assert np.array_equal(draws, again)
    with pytest.raises(ValueError, match="temperature > 0"):
        plackett_luce(scores, 1, 2, 0.0, np.random.default_rng(0))


def test_uniform_policy_spreads_exposure_evenly() -> None:
    ranks = plackett_luce(np.zeros(3), 30_000, 3, 1.0, np.random.default_rng(1))
    assert system_exposure(ranks, 3) == pytest.approx([(2 + D3) / 3] * 3, abs=0.01)


def test_expected_exposure_of_a_deterministic_policy_by_hand() -> None:
    # temperature → 0: every sampled ranking is a, b, c
    s = np.array([1, 1, D3])
    t = np.array([1, (1 + D3) / 2, (1 + D3) / 2])
    groups = pl.DataFrame({"doc_id": ["a", "b", "c"], "group": ["F", "M", "F"]})
    out = expected_exposure(RUN, QRELS, one_hot(groups), n_samples=5, length=20, temperature=1e-6)
    row = out.row(0, named=True)
    assert row["EE-L@20"] == pytest.approx(float(np.sum((s - t) ** 2)))
    assert row["EE-L@20"] == pytest.approx(2 * ((1 - D3) / 2) ** 2)
    assert row["EE-D@20"] == pytest.approx(2 + D3**2)
    assert row["EE-R@20"] == pytest.approx(1 + (1 + D3) / 2 + D3 * (1 + D3) / 2)
    # both sum to 2 + D3; only c (group F) is under-exposed, by (1 - D3) / 2
    under_f = ((1 - D3) / 2) / (2 + D3)
    assert row["EUE@20"] == pytest.approx(under_f**2)
    assert row["ee_no_relevant"] == 0


def test_relevant_document_missing_from_the_run_gets_target_but_no_exposure() -> None:
    qrels = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["c", "z"], "relevance": [1, 1]})
    out = expected_exposure(RUN, qrels, None, n_samples=3, length=20, temperature=1e-6)
    s = np.array([1, 1, D3, 0])
    tie = (D3 + 1 / math.log2(4)) / 2  # a and b share positions 3 and 4
    t = np.array([tie, tie, 1.0, 1.0])
    assert out["EE-L@20"][0] == pytest.approx(float(np.sum((s - t) ** 2)))
    assert "EUE@20" not in out.columns
    assert exposure_scores(s, t, None)["EE-R"] == pytest.approx(float(s @ t))


def test_exposure_family_is_registered_and_seeded() -> None:
    assert METRICS["exposure"].fn is exposure
    groups = pl.DataFrame({"doc_id": ["a", "b", "c"], "group": ["F", "M", "N"]})
    ctx = EvalInputs(RUN, QRELS, doc_groups=groups)
    first, second = exposure(ctx, (10,)), exposure(ctx, (10,))
    assert first.equals(second)
    assert set(first.columns) == {
        "query_id",
        "EE-L@20",
        "EE-D@20",
        "EE-R@20",
        "EUE@20",
        "ee_no_relevant",
    }


def _many_queries() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Three queries of 30 documents (one with all scores equal), graded qrels, F/M/N groups."""
    rng = np.random.default_rng(7)
    run, qrels = [], []
    for q in range(3):
        scores = np.zeros(30) if q == 2 else rng.normal(5.0, 2.0, size=30).round(2)
        order = np.argsort(-scores, kind="stable")
        run += [(f"q{q}", f"d{q}_{i}", float(scores[i]), r) for r, i in enumerate(order, 1)]
        qrels += [(f"q{q}", f"d{q}_{i}", int(rng.integers(0, 3))) for i in range(0, 30, 3)]
    docs = [d for _, d, _, _ in run]
    groups = pl.DataFrame({"doc_id": docs, "group": [("F", "M", "N")[i % 3] for i in range(90)]})
    return (
        pl.DataFrame(run, schema=["query_id", "doc_id", "score", "rank"], orient="row"),
        pl.DataFrame(qrels, schema=["query_id", "doc_id", "relevance"], orient="row"),
        groups,
    )


def test_standardise_is_a_z_score_and_zero_for_equal_scores() -> None:
    z = standardise(np.array([1.0, 2.0, 3.0]))
    assert z == pytest.approx([-math.sqrt(1.5), 0.0, math.sqrt(1.5)], abs=1e-15)
    assert standardise(np.array([0.1, 0.1, 0.1])).tolist() == [0.0, 0.0, 0.0]
    assert standardise(np.array([4.2])).tolist() == [0.0]


@pytest.mark.parametrize(("a", "b"), [(0.1, -3.0), (7.0, 2.0)])
def test_expected_exposure_ignores_positive_affine_maps_of_the_scores(a: float, b: float) -> None:
    """SPEC §4.6 "Score scale": the same ranking at another score scale, same seed."""
    run, qrels, groups = _many_queries()
    ctx = EvalInputs(run, qrels, doc_groups=groups)
    mapped = EvalInputs(run.with_columns(pl.col("score") * a + b), qrels, doc_groups=groups)
    first, second = exposure(ctx, (10,)), exposure(mapped, (10,))
    for col in ("EE-L@20", "EE-D@20", "EE-R@20", "EUE@20"):
        assert np.max(np.abs(first[col].to_numpy() - second[col].to_numpy())) <= 1e-12, col
    # the all-equal query gets the uniform policy: every document the same expected exposure
    uniform = exposure(EvalInputs(run.filter(pl.col("query_id") == "q2"), qrels), (10,))
    assert uniform["EE-D@20"][0] == pytest.approx(first["EE-D@20"][2], abs=1e-12)


def test_exposure_temperature_is_the_records_own_setting() -> None:
    run, qrels, groups = _many_queries()
    ctx = EvalInputs(run, qrels, doc_groups=groups)
    base = exposure(ctx, (10,))
    assert base.equals(exposure(ctx, (10,), ExposureConfig(temperature=1.0)))
    sharp = exposure(ctx, (10,), ExposureConfig(temperature=0.2))
    # a colder policy concentrates exposure on the top documents: larger EE-D (s·s)
    assert (sharp["EE-D@20"].head(2) > base["EE-D@20"].head(2)).all()
    with pytest.raises(ParamsError, match=r"'temperature': 0\.0 is out of range \(0, ∞\]"):
        ExposureConfig(temperature=0.0)
