"""Per-query variation of nDCG@10 by complexity bin (SPEC §4.5)."""

from __future__ import annotations

import math
import statistics

import polars as pl
import pytest

from pipeline.metrics import METRICS, SUMMARIES, EvalInputs, MissingInputError
from pipeline.metrics.suite import aggregate, evaluate
from pipeline.metrics.variation import summarise, variation

RUN = pl.DataFrame(
    {
        "query_id": ["q1", "q2", "q3", "q4", "q5"],
        "doc_id": ["d1"] * 5,
        "score": [1.0] * 5,
        "rank": [1] * 5,
    }
)
COMPLEXITY = pl.DataFrame(
    {
        "query_id": ["q1", "q2", "q3", "q4", "q5", "q9"],
        "complexity": [0.1, 0.2, 0.5, 0.8, 0.9, 0.3],
        "bin": ["easy", "easy", "medium", "hard", "hard", "medium"],
    }
)


def test_per_query_flags_and_missing_input() -> None:
    out = variation(EvalInputs(RUN, query_complexity=COMPLEXITY), (10,))
    assert out["query_id"].to_list() == ["q1", "q2", "q3", "q4", "q5"]
    assert out["var.n_easy"].to_list() == [1, 1, 0, 0, 0]
    assert out["var.n_hard"].to_list() == [0, 0, 0, 1, 1]
    assert out["var.complexity"].to_list() == [0.1, 0.2, 0.5, 0.8, 0.9]
    with pytest.raises(MissingInputError, match="'variation' needs 'query_complexity'"):
        variation(EvalInputs(RUN), (10,))
    assert METRICS["variation"].fn is variation and SUMMARIES["variation"] is summarise


def test_summary_hand_values() -> None:
    per_query = pl.DataFrame(
        {
            "query_id": ["q1", "q2", "q3", "q4", "q5"],
            "nDCG@10": [1.0, 0.5, 0.6, 0.0, 0.2],
            "var.n_easy": [1, 1, 0, 0, 0],
            "var.n_medium": [0, 0, 1, 0, 0],
            "var.n_hard": [0, 0, 0, 1, 1],
        }
    )
    got = summarise(per_query)
    # overall: mean 2.3/5 = 0.46; sample variance sum((x - 0.46)^2)/4
    var = (0.54**2 + 0.04**2 + 0.14**2 + 0.46**2 + 0.26**2) / 4
    assert got["var.nDCG@10.mean"] == pytest.approx(0.46)
    assert got["var.nDCG@10.std"] == pytest.approx(math.sqrt(var))
    assert got["var.nDCG@10.cv"] == pytest.approx(math.sqrt(var) / 0.46)
    # easy: 1.0, 0.5 -> mean 0.75, std sqrt(0.125); hard: 0.0, 0.2 -> mean 0.1, std sqrt(0.02)
    assert got["var.nDCG@10.easy.mean"] == pytest.approx(0.75)
    assert got["var.nDCG@10.easy.std"] == pytest.approx(math.sqrt(0.125))
    assert got["var.nDCG@10.easy.cv"] == pytest.approx(math.sqrt(0.125) / 0.75)
    assert got["var.nDCG@10.hard.mean"] == pytest.approx(0.1)
    assert got["var.nDCG@10.hard.std"] == pytest.approx(statistics.stdev([0.0, 0.2]))
    # medium has one query: its std and cv are undefined and left out
    assert got["var.nDCG@10.medium.mean"] == pytest.approx(0.6)
    assert "var.nDCG@10.medium.std" not in got and "var.nDCG@10.medium.cv" not in got
    assert got["var.nDCG@10.bin_spread"] == pytest.approx(0.75 - 0.1)
    assert all(math.isfinite(v) for v in got.values())
    # cv is left out when the mean is 0; nothing without the columns
    zero = per_query.with_columns(pl.lit(0.0).alias("nDCG@10"))
    assert "var.nDCG@10.cv" not in summarise(zero) and summarise(zero)["var.nDCG@10.std"] == 0.0
    assert summarise(per_query.drop("nDCG@10")) == {}
    assert aggregate(per_query.drop("var.n_easy"))["n_queries"] == 5


def test_suite_adds_variation_keys() -> None:
    qrels = pl.DataFrame(
        {"query_id": ["q1", "q2", "q3", "q4"], "doc_id": ["d1"] * 4, "relevance": [1] * 4}
    )
    ctx = EvalInputs(RUN, qrels=qrels, query_complexity=COMPLEXITY)
    agg, per_query = evaluate(ctx, ["effectiveness", "variation"], (10,))
    # nDCG@10 per query: 1, 1, 1, 1, 0 (q5 has no relevant document)
    assert agg["var.nDCG@10.mean"] == pytest.approx(0.8)
    assert agg["var.nDCG@10.easy.mean"] == 1.0 and agg["var.nDCG@10.hard.mean"] == 0.5
    assert agg["var.nDCG@10.bin_spread"] == pytest.approx(0.5)
    assert agg["var.n_easy"] == 2 and agg["var.n_medium"] == 1 and agg["var.n_hard"] == 2
    assert per_query.height == 5
    bare, _ = evaluate(EvalInputs(RUN, qrels=qrels), ["effectiveness", "variation"], (10,))
    assert not any(k.startswith("var.") for k in bare)
