"""Property tests (hypothesis) of every metric family in `pipeline.metrics.METRICS`.

Random evaluations: 1–4 queries, each with a background (candidate) list of 1–10 of 12
documents and a run that ranks a subset of it; graded qrels; bias counts, neutrality and
lexicon shares per document; F/M/N group labels on some documents. For every family: one
row per run query, finite values, values in the range its record declares, and the same per-query
table whatever the row order of the inputs, and (fairness families) whatever the order of
tied documents (SPEC §1 "Ties"). Plus two exact cases: ARaB of all-neutral
documents is 0, and AWRF is 1 when the run's group distribution equals the target.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics import METRICS, EvalInputs, MissingInputError, measure_of
from pipeline.metrics.arab import arab
from pipeline.metrics.awrf import awrf

pytestmark = pytest.mark.slow  # the fast loop skips it (README)

DOCS = [f"d{i:02d}" for i in range(12)]
CUTOFFS = (3, 10)
PROPERTY = settings(max_examples=50, deadline=None)
TOL = 1e-9
QRELS = {"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}


@st.composite
def evaluations(draw: st.DrawFn) -> dict[str, pl.DataFrame]:
    run, cands, qrels = [], [], []
    for q in range(draw(st.integers(1, 4))):
        qid = f"q{q}"
        background = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        cands += [(qid, d, r) for r, d in enumerate(background, 1)]
        ranked = draw(st.permutations(background))[: draw(st.integers(1, len(background)))]
        run += [(qid, d, float(len(ranked) - r), r) for r, d in enumerate(ranked, 1)]
        judged = draw(st.lists(st.sampled_from(DOCS), max_size=5, unique=True))
        qrels += [(qid, d, draw(st.integers(0, 2))) for d in judged]
    counts = st.integers(0, 5)
    share = st.floats(0.0, 0.5, allow_nan=False)
    scores = [
        {
            "doc_id": d,
            "tc_f": draw(counts),
            "tc_m": draw(counts),
            "tf_f": draw(share),
            "tf_m": draw(share),
            "bool_f": draw(st.integers(0, 1)),
            "bool_m": draw(st.integers(0, 1)),
            "neutrality": draw(st.floats(0.0, 1.0)),
            "lex_f": draw(share),
            "lex_m": draw(share),
        }
        for d in DOCS
    ]
    groups = [(d, g) for d in DOCS if (g := draw(st.sampled_from(["F", "M", "N", None])))]
    return {
        "run": pl.DataFrame(run, schema=["query_id", "doc_id", "score", "rank"], orient="row"),
        "qrels": pl.DataFrame(qrels, schema=QRELS, orient="row"),
        "doc_scores": pl.DataFrame(scores),
        "candidates": pl.DataFrame(cands, schema=["query_id", "doc_id", "rank"], orient="row"),
        "doc_groups": pl.DataFrame(groups, schema=["doc_id", "group"], orient="row"),
    }


def _evaluate(family: str, tables: dict[str, Any]) -> pl.DataFrame | None:
    try:
        return METRICS[family].run(EvalInputs(**tables), CUTOFFS)
    except MissingInputError:
        return None


def _bounds(column: str) -> tuple[float | None, float | None]:
    """The range the column's metric record declares (pipeline/metrics)."""
    m = measure_of(column)
    if m is None:
        return None, None
    return (None if math.isinf(m.lo) else m.lo), (None if math.isinf(m.hi) else m.hi)


def _shuffled(tables: dict[str, pl.DataFrame], seed: int) -> dict[str, pl.DataFrame]:
    return {
        k: v.sample(fraction=1.0, shuffle=True, seed=seed + i)
        for i, (k, v) in enumerate(tables.items())
    }


@pytest.mark.parametrize("family", sorted(METRICS))
@PROPERTY
@given(tables=evaluations())
def test_one_finite_row_per_query_within_range(family: str, tables: dict[str, Any]) -> None:
    out = _evaluate(family, tables)
    if out is None:
        pytest.skip(f"{family} needs an input the generator does not make")
    assert out["query_id"].to_list() == sorted(set(tables["run"]["query_id"]))
    for column, dtype in out.schema.items():
        values = out[column].drop_nulls().to_list()
        if dtype == pl.Int64:
            assert all(v >= 0 for v in values), column
        if dtype != pl.Float64:
            continue
        assert all(math.isfinite(v) for v in values), column
        lo, hi = _bounds(column)
        assert lo is None or all(v >= lo - TOL for v in values), (column, min(values, default=0))
        assert hi is None or all(v <= hi + TOL for v in values), (column, max(values, default=0))


@pytest.mark.parametrize("family", sorted(METRICS))
@settings(max_examples=30, deadline=None)
@given(tables=evaluations(), seed=st.integers(0, 2**16))
def test_row_order_does_not_matter(family: str, tables: dict[str, Any], seed: int) -> None:
    out = _evaluate(family, tables)
    if out is None:
        pytest.skip(f"{family} needs an input the generator does not make")
    again = _evaluate(family, _shuffled(tables, seed))
    assert again is not None and again.columns == out.columns
    assert again.schema == out.schema
    for column in out.columns:
        a, b = out[column].to_list(), again[column].to_list()
        if out.schema[column] == pl.Float64:
            assert [x is None for x in a] == [y is None for y in b], column
            pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None]
            assert all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in pairs), column
        else:
            assert a == b, column


@PROPERTY
@given(tables=evaluations())
def test_arab_of_neutral_documents_is_zero(tables: dict[str, Any]) -> None:
    counts = [f"{x}_{g}" for x in ("tc", "tf", "bool") for g in ("f", "m")]
    neutral = tables["doc_scores"].with_columns(pl.lit(0).alias(c) for c in counts)
    out = arab(EvalInputs(tables["run"], doc_scores=neutral), CUTOFFS)
    metrics = [c for c in out.columns if c.startswith("ARaB-")]
    assert len(metrics) == 6 * len(CUTOFFS)
    assert all(v == 0.0 for c in metrics for v in out[c].to_list())


@PROPERTY
@given(
    pairs=st.lists(st.booleans(), min_size=1, max_size=4),
    unlabelled=st.lists(st.integers(0, 6), min_size=1, max_size=4),
)
def test_awrf_is_one_when_run_matches_uniform_target(
    pairs: list[bool], unlabelled: list[int]
) -> None:
    """Ranks 1 and 2 share the discount 1, so one F and one M document there (either order)
    give the uniform F/M distribution; unlabelled documents further down are dropped."""
    run, groups = [], [("f", "F"), ("m", "M")]
    for q, female_first in enumerate(pairs):
        top = ["f", "m"] if female_first else ["m", "f"]
        rest = [f"u{i}" for i in range(unlabelled[q % len(unlabelled)])]
        run += [(f"q{q}", d, 0.0, r) for r, d in enumerate(top + rest, 1)]
    frame = pl.DataFrame(run, schema=["query_id", "doc_id", "score", "rank"], orient="row")
    doc_groups = pl.DataFrame(groups, schema=["doc_id", "group"], orient="row")
    out = awrf(EvalInputs(frame, doc_groups=doc_groups), CUTOFFS)
    for k in CUTOFFS:
        assert out[f"AWRF@{k}"].to_list() == pytest.approx([1.0] * len(pairs), abs=1e-12)
    only_female = frame.filter(pl.col("doc_id") != "m").with_columns(
        pl.int_range(1, pl.len() + 1).over("query_id").alias("rank")
    )
    skewed = awrf(EvalInputs(only_female, doc_groups=doc_groups), CUTOFFS)
    assert all(v < 1 - 0.1 for v in skewed[f"AWRF@{CUTOFFS[0]}"].to_list())


FAIRNESS = sorted(n for n, r in METRICS.items() if any(m.fairness for m in r.measures))
TIE_ORDER_DEPENDENT = ("MRR@", "nDCG@", "nDCGxAWRF@")  # effectiveness keeps the run order


@pytest.mark.parametrize("family", FAIRNESS)
@settings(max_examples=30, deadline=None)
@given(tables=evaluations(), width=st.integers(2, 4))
def test_tie_order_does_not_matter(family: str, tables: dict[str, Any], width: int) -> None:
    """SPEC §1 "Ties": coarse scores (blocks of `width` consecutive ranks tie) and the same run
    with every tie block reversed give the same fairness values (to 1e-12)."""
    run = tables["run"].with_columns((pl.col("score") // width).alias("score"))
    flipped = run.sort(["query_id", "score", "rank"], descending=[False, True, True])
    flipped = flipped.with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))
    out = _evaluate(family, tables | {"run": run})
    if out is None:
        pytest.skip(f"{family} needs an input the generator does not make")
    again = _evaluate(family, tables | {"run": flipped})
    assert again is not None and again.columns == out.columns
    for column in out.columns:
        if column == "query_id" or column.startswith(TIE_ORDER_DEPENDENT):
            continue
        a, b = out[column].to_list(), again[column].to_list()
        assert [x is None for x in a] == [y is None for y in b], column
        pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None]
        assert all(abs(x - y) <= 1e-12 for x, y in pairs), column
