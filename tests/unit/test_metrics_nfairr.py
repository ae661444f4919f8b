"""NFaiRR (Rekabsaz, Kopeinik & Schedl 2021) against hand-computed values (SPEC §4.3)."""

from __future__ import annotations

import logging
from math import log2

import polars as pl
import pytest

from pipeline.metrics import EvalInputs
from pipeline.metrics.nfairr import BACKGROUND_MISSING, MISSING, SKIPPED, nfairr
from pipeline.metrics.suite import evaluate

SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}


def ranked(lists: dict[str, list[str]]) -> pl.DataFrame:
    rows = [
        (q, d, float(len(docs) - i), i + 1) for q, docs in lists.items() for i, d in enumerate(docs)
    ]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def doc_scores(zeta: dict[str, float]) -> pl.DataFrame:
    zero = dict.fromkeys(
        (
            "tc_f",
            "tc_m",
            "tf_f",
            "tf_m",
            "bool_f",
            "bool_m",
            "psi_tc",
            "psi_tf",
            "psi_bool",
            "lex_f",
            "lex_m",
        ),
        0.0,
    )
    return pl.DataFrame(
        [{"doc_id": d, "neutrality": z, "n_words": 5} | zero for d, z in zeta.items()]
    )


# zeta: a = 0, b = 1, d = 0.5; c and e are missing from doc_scores (count zeta = 1).
ZETA = doc_scores({"a": 0.0, "b": 1.0, "d": 0.5})
RUN = ranked({"q1": ["a", "b", "c"], "q2": ["d", "a"], "q3": ["b"]})
# Background (BM25 candidates) in BM25 order; IFaiRR re-sorts it by zeta.
BACKGROUND = ranked({"q1": ["a", "b", "d", "e"], "q2": ["a"], "q3": ["d", "b"]})
CTX = EvalInputs(RUN, doc_scores=ZETA, candidates=BACKGROUND)


def p(r: int) -> float:
    return 1 / log2(r + 1)


def test_nfairr_with_background_and_missing_zeta() -> None:
    out = nfairr(CTX, (2, 10)).filter(pl.col("query_id") == "q1")
    fairr_10 = 0.0 * p(1) + 1.0 * p(2) + 1.0 * p(3)  # c missing -> zeta 1
    ifairr_10 = 1.0 * p(1) + 1.0 * p(2) + 0.5 * p(3) + 0.0 * p(4)  # b, e (missing), d, a
    assert out["NFaiRR@10"][0] == pytest.approx(fairr_10 / ifairr_10)
    assert out["NFaiRR@2"][0] == pytest.approx(
        (0.0 * p(1) + 1.0 * p(2)) / (1.0 * p(1) + 1.0 * p(2))
    )
    assert out[MISSING][0] == 1
    assert out[BACKGROUND_MISSING][0] == 1


def test_zero_ifairr_query_is_skipped_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        agg, per_query = evaluate(CTX, ["nfairr"], (10,))
    q1 = (p(2) + p(3)) / (p(1) + p(2) + 0.5 * p(3))
    q3 = (1.0 * p(1)) / (1.0 * p(1) + 0.5 * p(2))  # background sorted: b (1), d (0.5)
    assert agg["NFaiRR@10"] == pytest.approx((q1 + q3) / 2)
    assert agg[SKIPPED] == 1
    assert per_query.filter(pl.col("query_id") == "q2")["NFaiRR@10"][0] is None
    assert "IFaiRR = 0" in caplog.text


def test_query_without_background_is_skipped() -> None:
    ctx = EvalInputs(RUN, doc_scores=ZETA, candidates=ranked({"q1": ["a", "b"]}))
    out = nfairr(ctx, (10,))
    assert out[SKIPPED].to_list() == [0, 1, 1]
    assert out["NFaiRR@10"][0] == pytest.approx((p(2) + p(3)) / (1.0 * p(1) + 0.0 * p(2)))


def test_run_outside_background_can_exceed_one() -> None:
    ctx = EvalInputs(ranked({"q1": ["b"]}), doc_scores=ZETA, candidates=ranked({"q1": ["d"]}))
    assert nfairr(ctx, (10,))["NFaiRR@10"][0] == pytest.approx(1.0 / 0.5)
