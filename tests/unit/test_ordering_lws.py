"""`lws`: which negatives are replaced, by what, how many, and the errors for missing inputs."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.ordering import Inputs
from pipeline.ordering.lws import LwsConfig, biased_pool, lws

N = 200
TRIPLES = pl.DataFrame(
    {
        "query_id": ["q1" if i % 2 else "q2" for i in range(N)],
        "pos_doc_id": ["r1" if i % 2 else "r2" for i in range(N)],
        "neg_doc_id": [f"n{i}" for i in range(N)],
        "source": ["same_query"] * N,
    }
)
# q1's candidates: r1 (relevant, very biased), j1 (judged relevant), b1/b2/b3 biased, c0 neutral
CANDIDATES = pl.DataFrame(
    {
        "query_id": ["q1"] * 6 + ["q2"] * 2,
        "doc_id": ["r1", "j1", "b1", "b2", "b3", "c0", "r2", "c0"],
        "rank": [1, 2, 3, 4, 5, 6, 1, 2],
        "score": [9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 9.0, 8.0],
    }
)
QRELS = pl.DataFrame(
    {"query_id": ["q1", "q1", "q2"], "doc_id": ["r1", "j1", "r2"], "relevance": [1, 2, 1]}
)
SCORES = pl.DataFrame(
    {
        "doc_id": ["r1", "j1", "b1", "b2", "b3", "c0", "r2"],
        "psi_bool": [1.0, 1.0, -1.0, 1.0, 1.0, 0.0, 0.0],
        "psi_tf": [5.0, 4.0, -0.5, 2.0, 1.0, 0.0, 0.0],
        "psi_tc": [5.0, 4.0, -1.0, 3.0, 1.0, 0.0, 0.0],
    }
)


TABLES = {"train_candidates": CANDIDATES, "qrels": QRELS}


def _lws(triples: pl.DataFrame = TRIPLES, seed: int = 0, **cfg: float) -> pl.DataFrame:
    """``lws`` with ``orderings.lws`` = ``cfg``, Ψ column tf_abs and both input tables."""
    inp = Inputs(psi="tf_abs", seed=seed, tables=TABLES)
    return lws(triples, SCORES, LwsConfig(**cfg), inp)  # type: ignore[arg-type]


def test_pool_holds_the_most_biased_non_relevant_candidates() -> None:
    pool = biased_pool(TRIPLES, SCORES, CANDIDATES, QRELS, "tf_abs", top=2)
    # q1: r1/j1 relevant, c0 has Ψ = 0; |Ψ|: b2 2.0 > b3 1.0 > b1 0.5. q2: nothing biased.
    assert pool.rows() == [("q1", "b2"), ("q1", "b3")]


def test_rate_share_of_triples_gets_a_biased_negative() -> None:
    out = _lws(rate=0.5, top=2, seed=4)
    assert out.height == N and out["position"].to_list() == list(range(N))
    replaced = out.filter(pl.col("source") == "lws")
    assert set(replaced["neg_doc_id"]) <= {"b2", "b3"}
    assert set(replaced["query_id"]) == {"q1"}  # q2 has no biased candidate
    # round(0.5·200) = 100 chosen triples; about half of them are q1's
    assert 30 < replaced.height < 70
    kept = out.filter(pl.col("source") == "same_query")
    assert kept["neg_doc_id"].str.starts_with("n").all()
    assert kept.height + replaced.height == N


def test_rate_one_replaces_every_triple_with_a_pool() -> None:
    out = _lws(rate=1.0, top=1)
    q1 = out.filter(pl.col("query_id") == "q1")
    assert (q1["neg_doc_id"] == "b2").all() and (q1["source"] == "lws").all()
    assert out.filter(pl.col("query_id") == "q2")["neg_doc_id"].str.starts_with("n").all()


def test_rate_zero_is_the_seeded_shuffle() -> None:
    from pipeline.ordering import ORDERINGS

    out = _lws(rate=0.0, seed=3)
    shuffle = ORDERINGS["shuffle"]
    base = shuffle.fn(TRIPLES, SCORES, shuffle.config(), Inputs(psi="tf_abs", seed=3))
    assert out.equals(base)


def test_source_column_is_added_when_absent() -> None:
    out = _lws(TRIPLES.drop("source"), rate=1.0)
    assert set(out["source"]) == {"lws", "triples"}


def test_lws_is_seeded() -> None:
    a = _lws(rate=0.6, seed=1)
    assert a.equals(_lws(rate=0.6, seed=1))
    assert not a.equals(_lws(rate=0.6, seed=2))


def test_missing_inputs_are_clear_errors() -> None:
    cfg = LwsConfig()
    with pytest.raises(ValueError, match=r"'lws' needs the 'train_candidates' table \(columns"):
        lws(TRIPLES, SCORES, cfg, Inputs(tables={"qrels": QRELS}))
    with pytest.raises(ValueError, match=r"'lws' needs the 'qrels' table"):
        lws(TRIPLES, SCORES, cfg, Inputs(tables={"train_candidates": CANDIDATES}))
    broken = {"train_candidates": CANDIDATES, "qrels": QRELS.drop("relevance")}
    with pytest.raises(ValueError, match=r"table 'qrels' lacks columns \['relevance'\]"):
        lws(TRIPLES, SCORES, cfg, Inputs(tables=broken))
    empty = {"train_candidates": CANDIDATES.clear(), "qrels": QRELS}
    with pytest.raises(ValueError, match=r"candidates\.train_top_k is 0\); set it to a positive"):
        lws(TRIPLES, SCORES, cfg, Inputs(tables=empty))
