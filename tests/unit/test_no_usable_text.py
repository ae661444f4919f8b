"""A query or document with no usable word (empty, blank, emoji or punctuation only) is refused
at extract, naming its ids and the file (issue 43: such a query matched nothing, was filled
with its own judged documents and scored MRR = nDCG = 1.0); BM25 names the queries it could
not match."""

from __future__ import annotations

import csv
import dataclasses
import logging
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline import data as sources
from pipeline.data import grep_biasir, msmarco
from pipeline.data.common import Extracted, check_texts
from pipeline.errors import InputError
from pipeline.retrieval.bm25 import bm25_topk

DOCS_CSV = "queries-documents_Career.csv"


def _edit_csv(path: Path, key: str, changes: dict[str, tuple[str, str]]) -> None:
    """Set ``row[column] = value`` in the rows whose ``key`` is in ``changes``."""
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
        fields = list(rows[0])
    for row in rows:
        if row[key] in changes:
            column, value = changes[row[key]]
            row[column] = value
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture()
def grep_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "grep_biasir"
    shutil.copytree(grep_biasir.RESOURCE_DIR, copy)
    return copy


def test_queries_without_a_word_are_refused_naming_them_and_the_file(grep_copy: Path) -> None:
    _edit_csv(grep_copy / "queries.csv", "q_id",
              {"3": ("query", "\U0001f600\U0001f600"), "5": ("query", "  "),
               "7": ("query", "?!")})  # fmt: skip
    expected = (
        f"{grep_copy / 'queries.csv'}: 3 queries have no usable text (no letter or digit): "
        "query_id '3', '5', '7'; give each a text with at least one word"
    )
    with pytest.raises(InputError, match=re.escape(expected)):
        grep_biasir.load_grep_biasir(grep_copy)


def test_a_document_without_a_word_is_refused_naming_it_file_and_line(grep_copy: Path) -> None:
    path = grep_copy / DOCS_CSV
    with path.open(encoding="utf-8", newline="") as f:
        first = next(csv.DictReader(f))  # on line 2, after the header
    _edit_csv(path, "d_id", {first["d_id"]: ("document", "\U0001f469\u200d\U0001f52c")})
    with pytest.raises(
        grep_biasir.GrepBiasIRError,
        match=rf"{re.escape(str(path))}, line 2: document {first['d_id']!r} has no usable text",
    ):
        grep_biasir.load_grep_biasir(grep_copy)


def test_the_shipped_collections_have_text_everywhere() -> None:
    data = grep_biasir.load_grep_biasir()  # raises if any query or document had no word
    assert data.queries.height == 117 and data.corpus.height == 702
    assert msmarco.load_query_set("215").height == 215


def test_an_empty_line_of_a_shipped_query_set_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "set.tsv"
    path.write_text("1\tnurse salary\n2\t\n3\t\U0001f600\n", encoding="utf-8")
    monkeypatch.setitem(msmarco.QUERY_SETS, "215", path)
    with pytest.raises(InputError, match=rf"{re.escape(str(path))}: 2 queries .* '2', '3';"):
        msmarco.load_query_set("215")


def test_first_five_ids_and_the_count_are_named() -> None:
    table = pl.DataFrame({"doc_id": [f"d{i}" for i in range(8)], "text": [None, "", *"!?.,-;"]})
    with pytest.raises(
        InputError, match=re.escape("x.csv: 8 documents have no usable text (no letter or "
                                    "digit): doc_id 'd0', 'd1', 'd2', 'd3', 'd4' (+3 more);"),
    ):  # fmt: skip
        check_texts(table, "doc_id", "documents", "x.csv")
    check_texts(pl.DataFrame({"doc_id": ["a", "b"], "text": ["Ärztin", "护士 2"]}), "doc_id",
                "documents", "y")  # any script's letters and digits count  # fmt: skip


def test_every_source_is_checked_at_extract(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source that reads ir_datasets (no file of ours) is refused by the extract dispatcher,
    naming the source."""
    queries = pl.DataFrame({"query_id": ["q1", "q2"], "text": ["nurse", "\U0001f600"],
                            "split": ["test", "test"]})  # fmt: skip
    corpus = pl.DataFrame({"doc_id": ["d1"], "text": ["a nurse"]})
    empty = pl.DataFrame()
    fake = Extracted(corpus, queries, empty, empty)
    record = dataclasses.replace(sources.SOURCES["grep-biasir"], fn=lambda cfg: fake)
    monkeypatch.setitem(sources.SOURCES, "grep-biasir", record)
    with pytest.raises(InputError, match=r"^source 'grep-biasir': 1 queries .*query_id 'q2';"):
        sources.extract("grep-biasir", None)


def test_bm25_names_the_queries_it_could_not_match(caplog: pytest.LogCaptureFixture) -> None:
    corpus = pl.DataFrame({"doc_id": ["d1", "d2"], "text": ["the nurse", "a pilot"]})
    words = ["nurse", "the", "zebra", "quokka", "okapi", "tapir", "dingo", "pilot"]
    queries = pl.DataFrame({"query_id": [f"q{i}" for i in range(8)], "text": words})
    with caplog.at_level(logging.WARNING, logger="pipeline.retrieval.bm25"):
        cands = bm25_topk(corpus, queries, k=2)
    assert set(cands["query_id"]) == {"q0", "q7"}
    assert [r.getMessage() for r in caplog.records] == [
        "BM25: 6 of 8 queries matched no document (no word of theirs is in the collection, "
        "or only stop words): query_id 'q1', 'q2', 'q3', 'q4', 'q5' (+1 more)"
    ]
