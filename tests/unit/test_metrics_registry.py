"""Generic tests over the METRICS registry and the evaluation suite."""

from __future__ import annotations

import logging
import math
import typing

import polars as pl
import pytest

from pipeline.metrics import METRICS, EvalInputs, get_metric, measure_of
from pipeline.metrics.common import Direction
from pipeline.metrics.suite import evaluate

SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}
LISTS = {"q1": ["r1f", "r1m", "n1"], "q2": ["r2m", "n2", "r2f", "n1"]}


def ranked(lists: dict[str, list[str]]) -> pl.DataFrame:
    rows = [
        (q, d, float(len(docs) - i), i + 1) for q, docs in lists.items() for i, d in enumerate(docs)
    ]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def full_inputs() -> EvalInputs:
    docs = ["r1f", "r1m", "n1", "r2f", "r2m", "n2"]
    doc_scores = pl.DataFrame(
        {
            "doc_id": docs,
            **{c: [1, 0, 2, 0, 1, 0] for c in ("tc_f", "bool_f")},
            **{c: [0, 1, 0, 3, 0, 1] for c in ("tc_m", "bool_m")},
            "tf_f": [0.7, 0.0, 1.1, 0.0, 0.7, 0.0],
            "tf_m": [0.0, 0.7, 0.0, 1.4, 0.0, 0.7],
            "psi_tc": [1.0, -1.0, 2.0, -3.0, 1.0, -1.0],
            "psi_tf": [0.7, -0.7, 1.1, -1.4, 0.7, -0.7],
            "psi_bool": [1.0, -1.0, 1.0, -1.0, 1.0, -1.0],
            "neutrality": [1.0, 1.0, 0.0, 0.0, 1.0, 1.0],
            "lex_f": [0.1, 0.0, 0.2, 0.0, 0.1, 0.0],
            "lex_m": [0.0, 0.1, 0.0, 0.3, 0.0, 0.1],
            "n_words": [10] * 6,
        }
    )
    qrels = pl.DataFrame(
        {
            "query_id": ["q1", "q1", "q1", "q2", "q2", "q2"],
            "doc_id": ["r1f", "r1m", "n1", "r2f", "r2m", "n2"],  # n1, n2: neutral versions
            "relevance": [1, 1, 1, 2, 2, 2],
        }
    )
    groups = pl.DataFrame({"doc_id": docs, "group": ["F", "M", "N", "F", "M", "N"]})
    candidates = ranked({"q1": ["n1", "r1f", "r1m"], "q2": ["n1", "n2", "r2f", "r2m"]})
    complexity = pl.DataFrame(
        {"query_id": ["q1", "q2"], "complexity": [0.2, 0.7], "bin": ["easy", "hard"]}
    )
    return EvalInputs(
        ranked(LISTS), qrels, doc_scores, candidates, groups, query_complexity=complexity
    )


@pytest.mark.parametrize("name", sorted(METRICS))
def test_every_family_returns_finite_per_query_table(name: str) -> None:
    out = METRICS[name].run(full_inputs(), (2, 10))
    assert out["query_id"].to_list() == ["q1", "q2"]
    metric_cols = [c for c, t in out.schema.items() if t == pl.Float64]
    assert metric_cols, f"{name} returned no metric column"
    assert set(out.columns) - {"query_id"} == set(metric_cols) | {
        c for c, t in out.schema.items() if t == pl.Int64
    }
    for column in metric_cols:
        assert out[column].null_count() == 0, column
        assert all(math.isfinite(v) for v in out[column].to_list()), column
    for column in (c for c, t in out.schema.items() if t == pl.Int64):
        assert out[column].min() >= 0  # type: ignore[operator]


def test_unknown_metric_name_lists_known_ones() -> None:
    with pytest.raises(
        ValueError, match=r"unknown metric 'ndcg'; known: \['arab', 'awrf', 'counterfactual', "
    ):
        get_metric("ndcg")
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        evaluate(full_inputs(), ["arab", "nope"])


def test_suite_joins_all_families_one_row_per_query() -> None:
    agg, per_query = evaluate(full_inputs())
    assert per_query.height == 2
    assert agg["n_queries"] == 2
    for key in (
        "MRR@10",
        "nDCG@20",
        "ARaB-tf@10",
        "ARaB-tf-abs@10",
        "NFaiRR@20",
        "LIWC@10",
        "AWRF@10",
        "nDCGxAWRF@10",
        "gap-mean",
        "gap-abs",
        "gap-male-wins",
        "gap-neutral-first",
    ):
        assert math.isfinite(agg[key]), key
    assert agg["MRR@10"] == pytest.approx((1 / 1 + 1 / 1) / 2)
    assert agg["gap-mean"] == pytest.approx(((1 - 2) + (3 - 1)) / 2)
    assert isinstance(agg["nfairr_skipped"], int)


def test_suite_skips_families_with_missing_inputs(caplog: pytest.LogCaptureFixture) -> None:
    ctx = full_inputs()
    bare = EvalInputs(ctx.run, qrels=ctx.qrels)
    with caplog.at_level(logging.INFO):
        agg, per_query = evaluate(bare, cutoffs=(10,))
    assert "MRR@10" in agg
    assert not any(k.startswith(("ARaB", "NFaiRR", "LIWC", "AWRF", "gap")) for k in agg)
    assert "skipping metric family 'nfairr'" in caplog.text
    assert per_query.columns[0] == "query_id"


@pytest.mark.parametrize("cutoffs", [(), (0,), (10, -1)])
def test_bad_cutoffs_rejected(cutoffs: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="cutoffs must be positive integers"):
        evaluate(full_inputs(), ["liwc"], cutoffs)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_every_family_reports_the_measures_its_record_declares(name: str) -> None:
    """A record's measures are its Float64 columns (at each cut-off): what the report, the
    plots and the ir_measures names read from it exists, and nothing it reports is unknown."""
    out = METRICS[name].run(full_inputs(), (2, 10))
    floats = {c for c, t in out.schema.items() if t == pl.Float64}
    declared = {m.column(k) for m in METRICS[name].measures if m.setting is None for k in (2, 10)}
    assert declared <= floats
    assert all(measure_of(c) is not None for c in floats - {"var.complexity"}), floats
    for m in METRICS[name].measures:
        assert m.description and m.lo <= m.hi and m.direction in typing.get_args(Direction)
        assert m.magnitude is None or measure_of(m.magnitude.format(k=10)) is not None
