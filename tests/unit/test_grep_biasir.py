"""Grep-BiasIR extraction on the shipped files, and its errors on malformed copies."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.data.grep_biasir import (
    RESOURCE_DIR,
    GrepBiasIRError,
    load_grep_biasir,
    make_triples,
    split_queries,
)
from pipeline.ordering import draw_negatives


def test_shipped_collection_shape() -> None:
    data = load_grep_biasir()
    assert data.queries.height == 117
    assert data.corpus.height == 702
    assert data.qrels.height == 702
    # each query: one relevant and one non-relevant document, three versions each
    per_query = data.qrels.group_by("query_id").agg(pl.col("relevance").sum().alias("rel"))
    assert set(per_query["rel"]) == {3}
    assert set(data.corpus["group"]) == {"F", "M", "N", "both"}


def test_split_is_stratified_and_seeded() -> None:
    q = load_grep_biasir().queries
    a = split_queries(q, 0.3, seed=1)
    b = split_queries(q, 0.3, seed=1)
    c = split_queries(q, 0.3, seed=2)
    assert a.equals(b)
    assert not a.equals(c)
    per_cat = a.group_by("category").agg((pl.col("split") == "test").sum().alias("t"), pl.len())
    for row in per_cat.iter_rows(named=True):
        assert row["t"] == max(1, round(row["len"] * 0.3))


def test_triples_pair_relevant_with_nonrelevant() -> None:
    data = load_grep_biasir()
    train = ["0", "1"]
    t = make_triples(data, train, bm25_negatives=2, bm25_pool=5)
    rel = set(data.qrels.filter(pl.col("relevance") == 1)["doc_id"])
    assert set(t["pos_doc_id"]) <= rel
    same = t.filter(pl.col("source") == "same_query")
    assert same.height == 2 * 9
    own = data.qrels.filter(pl.col("query_id").is_in(train))
    options = t.filter(pl.col("source") == "bm25")
    assert options.height == 2 * 3 * 5 and (options["draw"] == 2).all()  # the pool, draw 2
    drawn = draw_negatives(t, 0)
    assert "draw" not in drawn.columns and drawn.height == 2 * 9 + 2 * 3 * 2
    bm25 = drawn.filter(pl.col("source") == "bm25")
    per_pos = bm25.group_by("query_id", "pos_doc_id").len()["len"]
    assert (per_pos == 2).all()
    # a query's F/M/N positives face the same two sampled negatives
    per_query = bm25.group_by("query_id").agg(pl.col("neg_doc_id").n_unique())["neg_doc_id"]
    assert (per_query == 2).all()
    other = draw_negatives(t, 1).filter(pl.col("source") == "bm25")
    assert set(other["neg_doc_id"]) <= set(options["neg_doc_id"])
    assert not other.equals(bm25)  # another seed, other sampled negatives
    assert draw_negatives(t, 0).equals(drawn)
    # BM25 negatives come from other queries
    pairs = set(zip(own["query_id"], own["doc_id"], strict=True))
    assert not any(
        (q, n) in pairs for q, n in zip(bm25["query_id"], bm25["neg_doc_id"], strict=True)
    )


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "grep"
    shutil.copytree(RESOURCE_DIR, root)
    return root


def test_malformed_row_names_file_and_line(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    f = root / "queries-documents_Career.csv"
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    f.write_text("".join(lines) + '15,9999,1,"a query"\n', encoding="utf-8")
    with pytest.raises(
        GrepBiasIRError, match=r"queries-documents_Career\.csv, line \d+: expected 8"
    ):
        load_grep_biasir(root)


def test_bad_relevance_value(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    f = root / "queries-documents_Career.csv"
    f.write_text(
        f.read_text(encoding="utf-8") + '15,9999,yes,q,title,"some text",F,x\n', encoding="utf-8"
    )
    with pytest.raises(GrepBiasIRError, match=r"relevant must be 0 or 1, got 'yes'"):
        load_grep_biasir(root)


def test_missing_queries_file(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "queries.csv").unlink()
    with pytest.raises(GrepBiasIRError, match=r"queries\.csv: Grep-BiasIR file not found"):
        load_grep_biasir(root)
