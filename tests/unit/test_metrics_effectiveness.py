"""MRR@k and nDCG@k through the ranx adapter, against hand-computed values (SPEC §4.1), with
trec_eval's tie rule (docs/decisions.md, "Effectiveness: one tie rule, trec_eval's")."""

from __future__ import annotations

import logging
import math

import polars as pl
import pytest

from pipeline.metrics import EvalInputs, MissingInputError
from pipeline.metrics.effectiveness import NO_RELEVANT, effectiveness
from pipeline.metrics.suite import evaluate


def ranked(lists: dict[str, list[str]], scores: str = "decreasing") -> pl.DataFrame:
    """A run with ranks 1..n in list order; `scores="reversed"` gives rank 1 the lowest score."""
    rows = [
        (q, d, float(i + 1 if scores == "reversed" else len(docs) - i), i + 1)
        for q, docs in lists.items()
        for i, d in enumerate(docs)
    ]
    schema = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def qrels(rows: list[tuple[str, str, int]]) -> pl.DataFrame:
    schema = {"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


RUN = {"q1": ["a", "b", "c"], "q2": ["d", "e", "f"], "q3": ["g", "h"]}
# q1: graded (b = 2 at rank 2, c = 1 at rank 3); q2: f at rank 3, d judged 0;
# q3: no relevant qrel at all; q9 is judged but not in the run (ignored).
QRELS = qrels(
    [("q1", "b", 2), ("q1", "c", 1), ("q2", "f", 1), ("q2", "d", 0), ("q3", "x", 0), ("q9", "a", 1)]
)


def by_query(frame: pl.DataFrame, column: str) -> dict[str, float]:
    return dict(zip(frame["query_id"].to_list(), frame[column].to_list(), strict=True))


def test_mrr_counts_queries_without_relevant_as_zero() -> None:
    out = effectiveness(EvalInputs(ranked(RUN), QRELS), (2, 10))
    assert by_query(out, "MRR@10") == pytest.approx({"q1": 1 / 2, "q2": 1 / 3, "q3": 0.0})
    assert by_query(out, "MRR@2") == pytest.approx({"q1": 1 / 2, "q2": 0.0, "q3": 0.0})
    assert by_query(out, NO_RELEVANT) == {"q1": 0, "q2": 0, "q3": 1}


def test_ndcg_graded_linear_gain() -> None:
    out = effectiveness(EvalInputs(ranked(RUN), QRELS), (2, 10))
    ideal_q1 = 2 / math.log2(2) + 1 / math.log2(3)
    expected_10 = {
        "q1": (2 / math.log2(3) + 1 / math.log2(4)) / ideal_q1,
        "q2": (1 / math.log2(4)) / (1 / math.log2(2)),
        "q3": 0.0,
    }
    expected_2 = {"q1": (2 / math.log2(3)) / ideal_q1, "q2": 0.0, "q3": 0.0}
    assert by_query(out, "nDCG@10") == pytest.approx(expected_10)
    assert by_query(out, "nDCG@2") == pytest.approx(expected_2)


def test_scores_rank_the_run_as_trec_eval_does() -> None:
    """trec_eval ignores the rank column: the order is score descending (reversed scores put
    the last-listed document first)."""
    out = effectiveness(EvalInputs(ranked(RUN, scores="reversed"), QRELS), (10,))
    assert by_query(out, "MRR@10") == pytest.approx({"q1": 1.0, "q2": 1.0, "q3": 0.0})


@pytest.mark.parametrize("order", [["a", "b", "c"], ["c", "a", "b"], ["b", "c", "a"]])
def test_tied_scores_are_ordered_by_doc_id_descending(order: list[str]) -> None:
    """trec_eval's tie rule (`comp_sim_docno`): equal scores by doc id descending, whatever
    the file's order: c, b, a here."""
    run = ranked({"q1": order}).with_columns(pl.lit(1.0).alias("score"))
    for relevant, rr in (("c", 1.0), ("b", 1 / 2), ("a", 1 / 3)):
        out = effectiveness(EvalInputs(run, qrels([("q1", relevant, 1)])), (10,))
        assert out["MRR@10"].to_list() == pytest.approx([rr])


def test_suite_averages_over_all_run_queries_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        agg, per_query = evaluate(EvalInputs(ranked(RUN), QRELS), ["effectiveness"], (10,))
    assert agg["MRR@10"] == pytest.approx((1 / 2 + 1 / 3 + 0) / 3)
    assert agg["n_queries"] == 3
    assert agg[NO_RELEVANT] == 1
    assert per_query.height == 3
    assert "1 of 3 queries have no relevant qrel" in caplog.text


def test_no_relevant_qrel_anywhere_gives_zeros() -> None:
    out = effectiveness(EvalInputs(ranked(RUN), qrels([("q1", "a", 0)])), (10,))
    assert out["MRR@10"].to_list() == [0.0, 0.0, 0.0]
    assert out[NO_RELEVANT].to_list() == [1, 1, 1]


def test_missing_qrels_raises_missing_input() -> None:
    with pytest.raises(MissingInputError, match="'effectiveness' needs 'qrels'"):
        effectiveness(EvalInputs(ranked(RUN)), (10,))


def test_adapter_matches_reference_formulas_on_uneven_lists() -> None:
    """Lists of different lengths exercise ranx's padded array input."""
    lists = {f"q{i}": [f"d{i}_{j}" for j in range(n)] for i, n in enumerate([1, 7, 3, 12, 5])}
    judged = [
        ("q1", "d1_6", 3), ("q1", "d1_0", 1), ("q1", "gone", 2),
        ("q2", "d2_2", 1), ("q3", "d3_11", 2), ("q3", "d3_4", 2), ("q4", "d4_0", 0),
    ]  # fmt: skip
    rel = {(q, d): r for q, d, r in judged}
    out = effectiveness(EvalInputs(ranked(lists), qrels(judged)), (5,))
    for q, docs in lists.items():
        gains = [rel.get((q, d), 0) for d in docs][:5]
        ideal = sorted((r for (qq, _), r in rel.items() if qq == q and r > 0), reverse=True)[:5]
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        rr = next((1 / (i + 1) for i, g in enumerate(gains) if g > 0), 0.0)
        row = out.filter(pl.col("query_id") == q)
        assert row["nDCG@5"][0] == pytest.approx(dcg / idcg if idcg else 0.0), q
        assert row["MRR@5"][0] == pytest.approx(rr), q
