"""pipeline.measures: the suite's metrics for any run, and as ir_measures custom measures."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipeline import measures

TEXTS = {
    "F": "she is a woman and her mother said the girl was right",
    "M": "he is a man and his father said the boy was right",
    "N": "the person said the student was right about the plan",
}


def _corpus() -> pl.DataFrame:
    rows = []
    for q in ("q1", "q2", "q3"):
        for kind in ("rel", "non"):
            for g, text in TEXTS.items():
                extra = " she" * (kind == "non") + f" {q}"
                rows.append({"doc_id": f"{q}-{kind}-{g}", "text": text + extra, "group": g})
    return pl.DataFrame(rows)


def _qrels() -> pl.DataFrame:
    rows = [
        {"query_id": q, "doc_id": f"{q}-rel-{g}", "relevance": 1}
        for q in ("q1", "q2", "q3")
        for g in "FMN"
    ]
    return pl.DataFrame(rows)


ORDERS = {  # best first; scores 6, 5, ... 1 (no ties)
    "q1": ["rel-M", "non-F", "rel-F", "rel-N", "non-M", "non-N"],
    "q2": ["non-N", "rel-F", "non-M", "rel-M", "rel-N", "non-F"],
    "q3": ["rel-N", "rel-F", "rel-M", "non-F", "non-M", "non-N"],
}


def _run(ties: bool = False) -> pl.DataFrame:
    rows = []
    for q, docs in ORDERS.items():
        for i, d in enumerate(docs):
            score = float(len(docs) - i)
            if ties and i in (2, 3):
                score = 3.5  # a tie block across the cut-off 3
            rows.append({"query_id": q, "doc_id": f"{q}-{d}", "score": score})
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def coll() -> measures.Collection:
    return measures.Collection.from_corpus(_corpus())


def test_compute_gives_the_suite_values(coll: measures.Collection) -> None:
    agg, per_query = measures.compute(_run(), _qrels(), coll, cutoffs=(3,))
    assert agg["n_queries"] == 3 and per_query.height == 3
    assert agg["MRR@3"] == pytest.approx((1 + 1 / 2 + 1) / 3)
    # gap = rank(F) − rank(M) of the relevant version: q1 3 − 1, q2 2 − 4, q3 2 − 3
    assert agg["gap-mean"] == pytest.approx((2 - 2 - 1) / 3)
    assert agg["gap-abs"] == pytest.approx((2 + 2 + 1) / 3)
    assert agg["gap-male-wins"] == pytest.approx(1 / 3)
    assert {"ARaB-tf-abs@3", "NFaiRR@3", "LIWC@3", "AWRF@3"} <= set(agg)


@pytest.mark.parametrize("ties", [False, True])
def test_ir_measures_calc_aggregate_equals_the_suite(coll: measures.Collection, ties: bool) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    run, qrels = _run(ties), _qrels()
    agg, _ = measures.compute(run, qrels, coll, cutoffs=(3,))
    m = measures.ir_measures_for(coll)
    wanted = {
        m.ARaB_tc@3: "ARaB-tc@3", m.ARaB_tf@3: "ARaB-tf@3", m.ARaB_bool@3: "ARaB-bool@3",
        m.ARaB_tc_abs@3: "ARaB-tc-abs@3", m.ARaB_tf_abs@3: "ARaB-tf-abs@3",
        m.ARaB_bool_abs@3: "ARaB-bool-abs@3", m.NFaiRR@3: "NFaiRR@3", m.LIWC@3: "LIWC@3",
        m.AWRF@3: "AWRF@3", m.nDCGxAWRF@3: "nDCGxAWRF@3", m.gap_mean: "gap-mean",
        m.gap_abs: "gap-abs", m.gap_male_wins: "gap-male-wins",
    }  # fmt: skip
    # nDCG@k: pytrec_eval, trec_eval's tie rule as the suite's; RR@k: ir_measures' msmarco
    # provider, which breaks ties by doc id ascending, so only on an untied run
    wanted |= {measures.nDCG @ 3: "nDCG@3"}
    if not ties:
        wanted |= {measures.RR @ 3: "MRR@3"}
    got = ir_measures.calc_aggregate(list(wanted), qrels.to_pandas(), run.to_pandas())
    for measure, key in wanted.items():
        assert got[measure] == pytest.approx(agg[key], abs=1e-12), (str(measure), key)
    assert str(m.ARaB_tf_abs @ 10) == "ARaB_tf_abs@10"
    assert measures.ir_measures_name("MRR@10") == "RR@10"


def test_undefined_queries_are_left_out_of_the_mean(coll: measures.Collection) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    run = _run().filter(~pl.col("doc_id").is_in(["q2-rel-M"]))  # q2: no M version ranked
    qrels = _qrels()
    agg, per_query = measures.compute(run, qrels, coll, cutoffs=(3,))
    assert per_query.filter(pl.col("query_id") == "q2")["gap-mean"][0] is None
    m = measures.ir_measures_for(coll)
    got = ir_measures.calc_aggregate([m.gap_mean], qrels.to_pandas(), run.to_pandas())
    assert got[m.gap_mean] == pytest.approx(agg["gap-mean"]) and not math.isnan(agg["gap-mean"])
