"""Counterfactual gender gap on Grep-BiasIR-shaped data (SPEC §4.7)."""

from __future__ import annotations

import logging

import polars as pl
import pytest

from pipeline.metrics import EvalInputs
from pipeline.metrics.counterfactual import SKIPPED, counterfactual
from pipeline.metrics.suite import evaluate

SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}


def ranked(lists: dict[str, list[str]]) -> pl.DataFrame:
    rows = [
        (q, d, float(len(docs) - i), i + 1) for q, docs in lists.items() for i, d in enumerate(docs)
    ]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


# Each query: a relevant doc in F/M/N versions (r<q>f, r<q>m, r<q>n), a non-relevant one (n<q>*).
GROUPS = pl.DataFrame(
    [
        (f"{kind}{q}{g.lower()}", g)
        for q in (1, 2, 3)
        for kind in ("r", "n")
        for g in ("F", "M", "N")
    ],
    schema={"doc_id": pl.String, "group": pl.String},
    orient="row",
)
QRELS = pl.DataFrame(
    [
        (f"q{q}", f"{kind}{q}{g}", int(kind == "r"))
        for q in (1, 2, 3)
        for kind in ("r", "n")
        for g in "fmn"
    ],
    schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64},
    orient="row",
)
RUN = ranked(
    {
        "q1": ["r1m", "n1f", "r1n", "r1f", "n1m", "n1n"],  # male version at 1, female at 4
        "q2": ["r2f", "r2m", "n2f"],  # female version wins
        "q3": ["r3f", "n3m", "r3n"],  # male version not ranked -> skipped
    }
)
CTX = EvalInputs(RUN, qrels=QRELS, doc_groups=GROUPS)


def test_gap_sign_male_version_ranked_higher_is_positive() -> None:
    out = counterfactual(CTX, (10,))
    rows = {r["query_id"]: r for r in out.iter_rows(named=True)}
    assert rows["q1"]["gap-mean"] == 4 - 1
    assert rows["q1"]["gap-male-wins"] == 1.0
    assert rows["q2"]["gap-mean"] == 1 - 2
    assert rows["q2"]["gap-male-wins"] == 0.0
    assert rows["q3"]["gap-mean"] is None
    assert [rows[q][SKIPPED] for q in ("q1", "q2", "q3")] == [0, 0, 1]


def test_gap_aggregates_skip_unranked(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        agg, _ = evaluate(CTX, ["counterfactual"])
    assert agg["gap-mean"] == pytest.approx((3 + (-1)) / 2)
    assert agg["gap-abs"] == pytest.approx((abs(3) + abs(-1)) / 2)
    assert agg["gap-male-wins"] == pytest.approx(1 / 2)
    assert agg[SKIPPED] == 1
    assert "1 of 3 queries skipped" in caplog.text


def test_all_skipped_leaves_gap_out_of_aggregates() -> None:
    run = ranked({"q3": ["r3f", "r3n"]})
    agg, _ = evaluate(EvalInputs(run, qrels=QRELS, doc_groups=GROUPS), ["counterfactual"])
    assert "gap-mean" not in agg
    assert agg[SKIPPED] == 1


def test_neutral_first_needs_the_neutral_version_above_both() -> None:
    """q1: M at 1, N at 3, F at 4 → 0; q2: F 1, M 2, N not ranked → null; a run with N first
    → 1; ties with the better gendered version are not "first"."""
    out = {r["query_id"]: r for r in counterfactual(CTX, (10,)).iter_rows(named=True)}
    assert out["q1"]["gap-neutral-first"] == 0.0
    assert out["q2"]["gap-neutral-first"] is None
    first = ranked({"q1": ["r1n", "r1f", "r1m"], "q2": ["r2n", "r2m", "r2f"]})
    rows = counterfactual(EvalInputs(first, qrels=QRELS, doc_groups=GROUPS), (10,))
    assert rows["gap-neutral-first"].to_list()[:2] == [1.0, 1.0]
    tied = first.with_columns(pl.lit(1.0).alias("score"))  # all tied: N is not above F/M
    rows = counterfactual(EvalInputs(tied, qrels=QRELS, doc_groups=GROUPS), (10,))
    assert rows["gap-neutral-first"].to_list()[:2] == [0.0, 0.0]


def test_a_tie_between_the_female_and_male_versions_counts_half() -> None:
    """Equal F and M scores: gap 0 and male-wins ½ (neither wins; issue 29: ties used to be
    female wins); a clear male or female win stays 1 / 0."""
    run = ranked({"q1": ["r1n", "r1f", "r1m"], "q2": ["r2m", "r2f", "r2n"]})
    tied = run.with_columns(
        pl.when(pl.col("doc_id") == "r1m").then(pl.lit(2.0)).otherwise(pl.col("score"))
        .alias("score")
    )  # fmt: skip
    rows = {r["query_id"]: r for r in counterfactual(
        EvalInputs(tied, qrels=QRELS, doc_groups=GROUPS), (10,)).iter_rows(named=True)}  # fmt: skip
    assert rows["q1"]["gap-mean"] == 0.0
    assert rows["q1"]["gap-male-wins"] == 0.5
    assert rows["q2"]["gap-male-wins"] == 1.0
    agg, _ = evaluate(EvalInputs(tied, qrels=QRELS, doc_groups=GROUPS), ["counterfactual"])
    assert agg["gap-male-wins"] == pytest.approx((0.5 + 1.0) / 2)
