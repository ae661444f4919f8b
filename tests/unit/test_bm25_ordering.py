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


def test_top_k_order_equals_the_full_sort_ties_and_zeros_included() -> None:
    import numpy as np

    from pipeline.retrieval.bm25 import top_k_order

    gen = np.random.default_rng(0)
    for n in (1, 7, 50, 1000):
        # few distinct values: many ties, at the k-th place too; zeros and negatives dropped
        scores = gen.integers(-2, 6, size=n).astype(np.float64) / 2
        for k in (1, 3, 10, n, n + 5):
            full = np.lexsort((np.arange(n), -scores))[:k]
            expected = full[scores[full] > 0]
            assert top_k_order(scores, k).tolist() == expected.tolist(), (n, k)
    assert top_k_order(np.zeros(4), 2).size == 0


def test_training_candidates_follow_train_top_k() -> None:
    from pipeline.params import CandidatesParams, ParamsError, parse_params
    from pipeline.retrieval.folds import candidates

    corpus = pl.DataFrame(
        {"doc_id": [f"d{i}" for i in range(6)],
         "text": ["red fox", "red hen", "blue fox", "red red", "fox den", "hen house"],
         "fold": [0, 0, 0, 1, 1, 1]}
    )  # fmt: skip
    queries = pl.DataFrame({"query_id": ["a", "b"], "text": ["red fox", "hen"], "fold": [0, 1]})
    first = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "rank": pl.Int64,
                                 "score": pl.Float64})  # fmt: skip
    test, train = candidates(corpus, queries, first, CandidatesParams(top_k=3))
    assert train.group_by("query_id").len()["len"].max() == 3  # null: top_k
    _, one = candidates(corpus, queries, first, CandidatesParams(top_k=3, train_top_k=1))
    assert one.group_by("query_id").len()["len"].to_list() == [1, 1]
    assert one.select("query_id", "doc_id").equals(
        train.filter(pl.col("rank") == 1).select("query_id", "doc_id")
    )
    same, none = candidates(corpus, queries, first, CandidatesParams(top_k=3, train_top_k=0))
    assert none.height == 0 and none.schema == train.schema and same.equals(test)
    from pathlib import Path

    import yaml

    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text())
    raw["candidates"]["train_top_k"] = -1
    import pytest

    with pytest.raises(ParamsError, match=r"candidates\.train_top_k"):
        parse_params(raw)


def test_sparse_scorer_equals_bm25s_dense_scores_and_their_top_k() -> None:
    """The candidates come from the postings' documents only, on two threads; they must be
    bm25s's dense scores bit for bit (the same float32 sums) in ``top_k_order``'s order."""
    import bm25s
    import numpy as np

    from pipeline.retrieval.bm25 import SparseScorer, tokenize, top_k_order

    gen = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    p = 1.0 / np.arange(1, 41)
    texts = [" ".join(gen.choice(words, size=gen.integers(1, 30), p=p / p.sum()))
             for _ in range(300)]  # fmt: skip
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(tokenize(texts), show_progress=False)
    scorer = SparseScorer(retriever, threads=2)
    queries = [["w0"], ["w3", "w3", "w7"], ["w39", "unknown"], ["unknown"], [],
               *(list(gen.choice(words, size=gen.integers(1, 8))) for _ in range(600))]  # fmt: skip
    for k in (1, 5, 300):
        got = list(scorer.top_k_many(queries, k))
        assert len(got) == len(queries)
        for query, (top, values) in zip(queries, got, strict=True):
            dense = retriever.get_scores(query) if query else np.zeros(len(texts), np.float32)
            assert top.tolist() == top_k_order(dense, k).tolist(), (query, k)
            assert np.array_equal(values, dense[top])  # bit for bit
    for acc, seen, _ in [scorer._buffers()]:
        assert not acc.any() and not seen.any()  # clean after every query


def test_short_test_lists_are_filled_to_top_k() -> None:
    """A test query's list holds top_k documents: BM25's matches first, then its own judged
    documents that BM25 missed, then the fold's other test documents (seeded), at score 0."""
    from pipeline.params import CandidatesParams
    from pipeline.retrieval.folds import candidates

    texts = ["red fox", "red hen", "blue sky", "green sea", "dark den", "cold rain",
             "tall tree", "old barn", "red wine"]  # fmt: skip
    corpus = pl.DataFrame({"doc_id": [f"d{i}" for i in range(9)], "text": texts,
                           "fold": [0] * 8 + [1]})  # fmt: skip
    queries = pl.DataFrame({"query_id": ["a", "b", "c"], "text": ["red", "zebra", "wine"],
                            "fold": [0, 0, 1]})  # fmt: skip
    qrels = pl.DataFrame({"query_id": ["a", "a", "b"], "doc_id": ["d2", "d0", "d7"],
                          "relevance": [1, 0, 1]})  # fmt: skip
    first = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "rank": pl.Int64,
                                 "score": pl.Float64})  # fmt: skip
    p = CandidatesParams(top_k=5, train_top_k=0)
    test, _ = candidates(corpus, queries, first, p, qrels)
    a = test.filter(pl.col("query_id") == "a").sort("rank")
    assert a.height == 5 and a["rank"].to_list() == [1, 2, 3, 4, 5]
    assert set(a["doc_id"][:2]) == {"d0", "d1"} and (a["score"][:2] > 0).all()  # BM25 "red"
    assert a["doc_id"][2] == "d2" and (a["score"][2:] == 0).all()  # own judged, then random
    b = test.filter(pl.col("query_id") == "b").sort("rank")  # "zebra" matches nothing
    assert b.height == 5 and b["doc_id"][0] == "d7" and (b["score"] == 0).all()
    assert b["doc_id"].n_unique() == 5
    again, _ = candidates(corpus, queries, first, p, qrels)
    assert again.equals(test)  # seeded
    reseeded = CandidatesParams(top_k=5, train_top_k=0, fill_seed=1)
    other, _ = candidates(corpus, queries, first, reseeded, qrels)
    assert not other.equals(test)
    full, _ = candidates(corpus, queries, first, CandidatesParams(top_k=2, train_top_k=0), qrels)
    assert full.filter(pl.col("query_id") == "a")["doc_id"].sort().to_list() == ["d0", "d1"]
