"""BM25 candidates and the shuffle ordering."""

from __future__ import annotations

import polars as pl

from pipeline.ordering import ORDERINGS, Inputs
from pipeline.retrieval.bm25 import bm25_topk


def test_bm25_ranks_matching_documents_first() -> None:
    corpus = pl.DataFrame(
        {"doc_id": ["a", "b", "c"], "text": ["nurse shift", "car engine repair", "nurse nurse"]}
    )
    queries = pl.DataFrame({"query_id": ["1", "2"], "text": ["nurse", "engine"]})
    c = bm25_topk(corpus, queries, k=5)
    q1 = c.filter(pl.col("query_id") == "1")
    assert q1["doc_id"].to_list() == ["c", "a"]  # more occurrences first; `b` never matches
    assert q1["rank"].to_list() == [1, 2]
    assert c.filter(pl.col("query_id") == "2")["doc_id"].to_list() == ["b"]


def _triples(n: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": [str(i % 3) for i in range(n)],
            "pos_doc_id": [f"p{i}" for i in range(n)],
            "neg_doc_id": [f"n{i}" for i in range(n)],
        }
    )


def test_every_ordering_keeps_each_triple_once() -> None:
    t = _triples(50)
    scores = pl.DataFrame({"doc_id": ["p1"], "psi_bool": [-1.0], "psi_tf": [0.5], "psi_tc": [2.0]})
    # orderings that drop triples or need candidates: tests/unit/test_ordering_registry.py
    for name, record in sorted(ORDERINGS.items()):
        if record.filters or record.needs:
            continue
        cfg = record.config(psi="bool_abs") if name == "curriculum" else record.config()
        out = record.fn(t, scores, cfg, Inputs(psi="bool_abs", seed=1))
        assert out["position"].to_list() == list(range(50)), name
        assert sorted(out["pos_doc_id"]) == sorted(t["pos_doc_id"]), name
        assert out.filter(pl.col("pos_doc_id") == "p1")["psi"].item() == 1.0


def test_shuffle_is_seeded() -> None:
    t = _triples(30)
    scores = pl.DataFrame({"doc_id": ["x"], "psi_bool": [0.0], "psi_tf": [0.0], "psi_tc": [0.0]})
    run, cfg = ORDERINGS["shuffle"].fn, ORDERINGS["shuffle"].config()
    a = run(t, scores, cfg, Inputs(seed=1))
    b = run(t, scores, cfg, Inputs(seed=1))
    c = run(t, scores, cfg, Inputs(seed=2))
    assert a.equals(b)
    assert not a.equals(c)
