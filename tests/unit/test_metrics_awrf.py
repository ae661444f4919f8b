"""AWRF and nDCG x AWRF (TREC Fair Ranking 2022) against hand-computed values (SPEC §4.6)."""

from __future__ import annotations

from math import log, log2

import polars as pl
import pytest

from pipeline.metrics import EvalInputs
from pipeline.metrics.awrf import FALLBACK, UNGROUPED, AwrfConfig, awrf
from pipeline.metrics.suite import evaluate

SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}


def ranked(lists: dict[str, list[str]]) -> pl.DataFrame:
    rows = [
        (q, d, float(len(docs) - i), i + 1) for q, docs in lists.items() for i, d in enumerate(docs)
    ]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def jsd(p: list[float], q: list[float]) -> float:
    """Jensen-Shannon divergence, natural log, 0 ln 0 = 0."""
    m = [(a + b) / 2 for a, b in zip(p, q, strict=True)]
    kl_pm = sum(a * log(a / c) for a, c in zip(p, m, strict=True) if a > 0)
    kl_qm = sum(b * log(b / c) for b, c in zip(q, m, strict=True) if b > 0)
    return 0.5 * kl_pm + 0.5 * kl_qm


GROUPS = pl.DataFrame({"doc_id": ["f1", "f2", "m1"], "group": ["F", "F", "M"]})
RUN = ranked({"q1": ["f1", "m1"], "q2": ["f1", "f2", "m1"], "q3": ["u", "m1"]})  # u: no group
QRELS = pl.DataFrame(
    {"query_id": ["q1", "q2", "q3"], "doc_id": ["f1", "m1", "u"], "relevance": [1, 1, 1]}
)


def by_query(frame: pl.DataFrame, column: str) -> dict[str, float | None]:
    return dict(zip(frame["query_id"].to_list(), frame[column].to_list(), strict=True))


def test_awrf_is_one_when_run_matches_uniform_target() -> None:
    # d(1) = d(2) = 1/log2(2) = 1: one F and one M document -> p = (1/2, 1/2) = target.
    out = awrf(EvalInputs(RUN, doc_groups=GROUPS), (10,))
    assert by_query(out, "AWRF@10")["q1"] == pytest.approx(1.0)


def test_awrf_hand_computed_jsd() -> None:
    out = awrf(EvalInputs(RUN, doc_groups=GROUPS), (2, 10))
    w = [1 / log2(2), 1 / log2(2), 1 / log2(3)]  # discounts at ranks 1, 2, 3
    p10 = [(w[0] + w[1]) / sum(w), w[2] / sum(w)]  # (F, M)
    assert by_query(out, "AWRF@10")["q2"] == pytest.approx(1 - jsd(p10, [0.5, 0.5]))
    expected_2 = 1 - (
        0.5 * (1 * log(1 / 0.75)) + 0.5 * (0.5 * log(0.5 / 0.75) + 0.5 * log(0.5 / 0.25))
    )
    assert by_query(out, "AWRF@2")["q2"] == pytest.approx(expected_2)
    # q3: the unlabelled document is dropped, so the run is all-M.
    assert by_query(out, "AWRF@10")["q3"] == pytest.approx(1 - jsd([0.0, 1.0], [0.5, 0.5]))
    assert by_query(out, UNGROUPED) == {"q1": 0, "q2": 0, "q3": 1}


def test_awrf_relevant_target_and_ndcg_product() -> None:
    ctx = EvalInputs(RUN, qrels=QRELS, doc_groups=GROUPS)
    out = awrf(ctx, (10,), AwrfConfig(target="relevant"))
    background = [2 / 3, 1 / 3]  # corpus-wide: two F documents, one M
    target_q2 = [0.5 * 0 + 0.5 * background[0], 0.5 * 1 + 0.5 * background[1]]  # m1 relevant
    w = [1, 1, 1 / log2(3)]
    p_q2 = [(w[0] + w[1]) / sum(w), w[2] / sum(w)]
    awrf_q2 = 1 - jsd(p_q2, target_q2)
    assert by_query(out, "AWRF@10")["q2"] == pytest.approx(awrf_q2)
    ndcg_q2 = (1 / log2(4)) / (1 / log2(2))  # m1 relevant at rank 3
    assert by_query(out, "nDCGxAWRF@10")["q2"] == pytest.approx(ndcg_q2 * awrf_q2)
    # q3's only relevant document has no group: the target falls back to the background.
    assert by_query(out, "AWRF@10")["q3"] == pytest.approx(1 - jsd([0.0, 1.0], background))
    assert by_query(out, FALLBACK) == {"q1": 0, "q2": 0, "q3": 1}


def test_query_without_labelled_documents_is_skipped() -> None:
    run = ranked({"q1": ["f1", "m1"], "q2": ["u", "v"]})
    agg, per_query = evaluate(EvalInputs(run, doc_groups=GROUPS), ["awrf"], (10,))
    assert by_query(per_query, "AWRF@10")["q2"] is None
    assert agg["AWRF@10"] == pytest.approx(1.0)
    assert agg["awrf_skipped@10"] == 1
    assert "nDCGxAWRF@10" not in agg  # no qrels
