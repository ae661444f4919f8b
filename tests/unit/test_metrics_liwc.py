"""LIWC gender score against hand-computed values (SPEC §4.4)."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.metrics import EvalInputs
from pipeline.metrics.liwc import MISSING, liwc
from pipeline.metrics.suite import evaluate

SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}


def ranked(lists: dict[str, list[str]]) -> pl.DataFrame:
    rows = [
        (q, d, float(len(docs) - i), i + 1) for q, docs in lists.items() for i, d in enumerate(docs)
    ]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def doc_scores(shares: dict[str, tuple[float, float]]) -> pl.DataFrame:
    zero = dict.fromkeys(
        ("tc_f", "tc_m", "tf_f", "tf_m", "bool_f", "bool_m", "psi_tc", "psi_tf", "psi_bool"), 0.0
    )
    rows = [
        {"doc_id": d, "lex_f": f, "lex_m": m, "neutrality": 1.0, "n_words": 20} | zero
        for d, (f, m) in shares.items()
    ]
    return pl.DataFrame(rows)


SCORES = doc_scores({"a": (0.2, 0.0), "b": (0.0, 0.1), "c": (0.05, 0.05)})
RUN = ranked({"q1": ["a", "b", "c"], "q2": ["b", "c"], "q3": ["z"]})  # z has no scores


def test_liwc_per_query() -> None:
    out = liwc(EvalInputs(RUN, doc_scores=SCORES), (2, 10))
    rows = {r["query_id"]: r for r in out.iter_rows(named=True)}
    assert rows["q1"]["LIWC@2"] == pytest.approx(abs(((0.2 - 0.0) + (0.0 - 0.1)) / 2) * 100)
    assert rows["q1"]["LIWC@10"] == pytest.approx(
        abs(((0.2 - 0.0) + (0.0 - 0.1) + (0.05 - 0.05)) / 3) * 100
    )
    assert rows["q2"]["LIWC@10"] == pytest.approx(abs(((0.0 - 0.1) + (0.05 - 0.05)) / 2) * 100)
    assert rows["q3"]["LIWC@10"] == pytest.approx(0.0)
    assert rows["q3"][MISSING] == 1


def test_liwc_mean_over_all_queries() -> None:
    agg, _ = evaluate(EvalInputs(RUN, doc_scores=SCORES), ["liwc"], (10,))
    q1 = abs((0.2 - 0.1 + 0.0) / 3) * 100
    q2 = abs((-0.1 + 0.0) / 2) * 100
    assert agg["LIWC@10"] == pytest.approx((q1 + q2 + 0.0) / 3)
    assert agg[MISSING] == 1


def test_opposite_leanings_do_not_cancel_across_queries() -> None:
    scores = doc_scores({"f": (0.1, 0.0), "m": (0.0, 0.1)})
    agg, _ = evaluate(
        EvalInputs(ranked({"q1": ["f"], "q2": ["m"]}), doc_scores=scores), ["liwc"], (10,)
    )
    assert agg["LIWC@10"] == pytest.approx((10.0 + 10.0) / 2)
