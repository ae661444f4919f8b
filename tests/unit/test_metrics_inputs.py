"""Validation of the evaluation inputs: errors name the problem, the first offender and the fix."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipeline.metrics import EvalInputs

SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}


def run(rows: list[tuple[str, str, float, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_score_is_rejected(bad: float) -> None:
    rows = [("q1", "a", 2.0, 1), ("q1", "b", bad, 2), ("q2", "c", bad, 1)]
    with pytest.raises(
        ValueError,
        match=r"run: 2 rows with non-finite .*first at "
        r"\{'query_id': 'q1', 'doc_id': 'b'\}.*Fix: drop or re-score",
    ):
        EvalInputs(run(rows))


def test_duplicate_query_doc_is_rejected() -> None:
    rows = [("q1", "a", 2.0, 1), ("q1", "a", 1.0, 2)]
    with pytest.raises(
        ValueError,
        match=r"duplicate \('query_id', 'doc_id'\) rows; "
        r"first at \{'query_id': 'q1', 'doc_id': 'a'\}.*Fix: keep one row",
    ):
        EvalInputs(run(rows))


def test_ranks_must_be_one_to_n() -> None:
    rows = [("q1", "a", 2.0, 1), ("q1", "b", 1.0, 3)]
    with pytest.raises(
        ValueError, match=r"ranks are not 1\.\.n; first query 'q1' has 2 rows with ranks 1\.\.3"
    ):
        EvalInputs(run(rows))


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match=r"run: missing columns \['rank'\]"):
        EvalInputs(run([("q1", "a", 1.0, 1)]).drop("rank"))


def test_ids_are_cast_to_strings() -> None:
    frame = pl.DataFrame(
        {"query_id": [1, 1], "doc_id": [7, 8], "score": [2.0, 1.0], "rank": [1, 2]}
    )
    assert EvalInputs(frame).run.schema["query_id"] == pl.String


def test_unknown_awrf_target_rejected() -> None:
    from pipeline.metrics.awrf import AwrfConfig

    with pytest.raises(ValueError, match=r"'target': unknown value 'x'; known: \['uniform', 'rel"):
        AwrfConfig(target="x")  # type: ignore[arg-type]
