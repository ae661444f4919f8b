"""ARaB (Rekabsaz & Schedl 2020) against hand-computed values (SPEC §4.2)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipeline.metrics import EvalInputs
from pipeline.metrics.arab import MISSING, arab
from pipeline.metrics.suite import evaluate

SCORE_COLUMNS = (
    "tc_f",
    "tc_m",
    "tf_f",
    "tf_m",
    "bool_f",
    "bool_m",
    "psi_tc",
    "psi_tf",
    "psi_bool",
    "neutrality",
    "lex_f",
    "lex_m",
)


def ranked(lists: dict[str, list[str]]) -> pl.DataFrame:
    rows = [
        (q, d, float(len(docs) - i), i + 1) for q, docs in lists.items() for i, d in enumerate(docs)
    ]
    schema = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def doc_scores(docs: dict[str, dict[str, float]]) -> pl.DataFrame:
    """A doc_scores table; unspecified columns are 0 (neutrality 1)."""
    rows = [
        {"doc_id": d}
        | {c: v.get(c, 1.0 if c == "neutrality" else 0.0) for c in SCORE_COLUMNS}
        | {"n_words": 10}
        for d, v in docs.items()
    ]
    return pl.DataFrame(rows)


def counts(c_f: int, c_m: int) -> dict[str, float]:
    """The SPEC §2 columns of a document with c_f female and c_m male words."""
    return {
        "tc_f": c_f,
        "tc_m": c_m,
        "tf_f": math.log(c_f + 1),
        "tf_m": math.log(c_m + 1),
        "bool_f": float(c_f > 0),
        "bool_m": float(c_m > 0),
    }


# d1 = (2 f, 0 m), d2 = (0 f, 1 m), d3 is missing from doc_scores (counts as zeros).
SCORES = doc_scores({"d1": counts(2, 0), "d2": counts(0, 1)})
RUN = ranked({"q1": ["d1", "d2", "d3"], "q2": ["d2", "d1"]})


def arab_by_hand(pairs: list[tuple[float, float]], k: int) -> float:
    """male − female of ARaB_q@k, written as the published nested means."""
    n = min(k, len(pairs))
    rab = [
        (sum(f for f, _ in pairs[:t]) / t, sum(m for _, m in pairs[:t]) / t)
        for t in range(1, n + 1)
    ]
    return sum(m for _, m in rab) / n - sum(f for f, _ in rab) / n


def test_arab_tc_three_documents_explicit() -> None:
    out = arab(EvalInputs(RUN, doc_scores=SCORES), (2, 10)).filter(pl.col("query_id") == "q1")
    # RaB@1 = (2, 0), RaB@2 = (2/2, 1/2), RaB@3 = (2/3, 1/3)
    arab_f_10 = (2 + 2 / 2 + 2 / 3) / 3
    arab_m_10 = (0 + 1 / 2 + 1 / 3) / 3
    assert out["ARaB-tc@10"][0] == pytest.approx(arab_m_10 - arab_f_10)
    assert out["ARaB-tc-abs@10"][0] == pytest.approx(abs(arab_m_10 - arab_f_10))
    assert out["ARaB-tc@2"][0] == pytest.approx((0 + 1 / 2) / 2 - (2 + 2 / 2) / 2)
    assert out[MISSING][0] == 1


@pytest.mark.parametrize("x", ["tc", "tf", "bool"])
def test_arab_signed_and_abs_means_over_queries(x: str) -> None:
    agg, _ = evaluate(EvalInputs(RUN, doc_scores=SCORES), ["arab"], (10,))
    d1, d2, zero = counts(2, 0), counts(0, 1), (0.0, 0.0)
    pair = {"d1": (d1[f"{x}_f"], d1[f"{x}_m"]), "d2": (d2[f"{x}_f"], d2[f"{x}_m"]), "d3": zero}
    q1 = arab_by_hand([pair["d1"], pair["d2"], pair["d3"]], 10)
    q2 = arab_by_hand([pair["d2"], pair["d1"]], 10)
    assert agg[f"ARaB-{x}@10"] == pytest.approx((q1 + q2) / 2)
    assert agg[f"ARaB-{x}-abs@10"] == pytest.approx((abs(q1) + abs(q2)) / 2)
    assert agg[MISSING] == 1


def test_arab_tf_q2_value() -> None:
    out = arab(EvalInputs(RUN, doc_scores=SCORES), (10,)).filter(pl.col("query_id") == "q2")
    # ranks: d2 = (0, ln 2), d1 = (ln 3, 0); RaB@1 = (0, ln 2), RaB@2 = (ln 3 / 2, ln 2 / 2)
    expected = (math.log(2) + math.log(2) / 2) / 2 - (0 + math.log(3) / 2) / 2
    assert out["ARaB-tf@10"][0] == pytest.approx(expected)


def test_male_leaning_list_is_positive() -> None:
    out = arab(EvalInputs(ranked({"q1": ["d2"]}), doc_scores=SCORES), (10,))
    assert out["ARaB-bool@10"][0] == pytest.approx(1.0 - 0.0)
