"""The paper-scale rehearsal's synthetic MS MARCO (benchmarks/rehearsal): shapes of the
generated source, the ir_datasets objects serving it, and the pipeline's real MS MARCO loader
reading it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from ir_datasets.formats import GenericDoc, GenericDocPair, GenericQuery, TrecQrel

from benchmarks.rehearsal.generate import GenConfig, gender_words, generate
from benchmarks.rehearsal.source import COLLECTION_ID, DEV_ID, TRIPLES_ID, loader
from benchmarks.rehearsal.trec_fair_generate import FairGenConfig
from benchmarks.rehearsal.trec_fair_generate import generate as gen_fair
from pipeline import io, schemas
from pipeline.data.msmarco import MsmarcoConfig, extract_msmarco, load_query_set

ROOT = Path(__file__).resolve().parents[2]

TINY = GenConfig(
    passages=3000,
    triples=800,
    train_queries=400,
    triple_query_pool=300,
    dev_queries=2500,
    dev_qrels=2700,
    vocab_size=40_000,
    chunk=700,  # several chunks, the last one short
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rehearsal-source")
    generate(TINY, out)
    return out


def test_generated_shape(source: Path) -> None:
    meta = json.loads((source / "meta.json").read_text())
    assert meta["passages"] == 3000 and meta["triples"] == 800
    assert 50 <= meta["words_median"] <= 60  # MS MARCO-like: median about 55 words
    assert 0.005 < meta["gender_token_rate"] < 0.012
    assert 0.25 < meta["gendered_passage_share"] < 0.5
    docs = pl.read_parquet(source / "docs.parquet")
    assert docs["doc_id"].to_list() == [str(i) for i in range(3000)]
    words = docs["text"].str.split(" ").explode()
    assert words.value_counts(sort=True)["text"][0] == "the"  # Zipf head: function words
    male, female = gender_words()
    present = set(words.to_list())
    assert {"he", "his", "she", "her"} <= present
    assert len(present & set(male)) > 5 and len(present & set(female)) > 5
    # the same source again is kept, not regenerated
    assert generate(TINY, source)["seconds"] == meta["seconds"]


def test_served_as_ir_datasets_namedtuples(source: Path) -> None:
    load = loader(source)
    collection, triples, dev = load(COLLECTION_ID), load(TRIPLES_ID), load(DEV_ID)
    docs = list(collection.docs_iter())
    assert collection.docs_count() == len(docs) == 3000
    assert type(docs[0]) is GenericDoc and docs[0]._fields == ("doc_id", "text")
    found = collection.docs_store().get_many(["2999", "17", "missing", "3000"])
    assert set(found) == {"2999", "17"}
    assert found["17"] == docs[17] and type(found["17"]) is GenericDoc
    pairs = list(triples.docpairs_iter())
    assert triples.docpairs_count() == len(pairs) == 800
    assert type(pairs[0]) is GenericDocPair
    assert pairs[0]._fields == ("query_id", "doc_id_a", "doc_id_b")
    queries = {q.query_id: q for q in triples.queries_iter()}
    assert type(next(iter(queries.values()))) is GenericQuery
    assert {p.query_id for p in pairs} <= set(queries)
    # a positive passage holds its query's words
    p = pairs[0]
    assert docs[int(p.doc_id_a)].text.startswith(queries[p.query_id].text)
    qrels = list(dev.qrels_iter())
    assert type(qrels[0]) is TrecQrel and isinstance(qrels[0].relevance, int)
    judged = {q.query_id for q in qrels}
    for name in ("1765", "215"):
        assert set(load_query_set(name)["query_id"].to_list()) <= judged
    with pytest.raises(KeyError, match="no 'msmarco-passage/eval'"):
        load("msmarco-passage/eval")


def test_read_by_the_pipeline_msmarco_loader(source: Path, tmp_path: Path) -> None:
    cfg = MsmarcoConfig(
        n_triples=800, query_set="1765", candidates="bm25", candidates_k=5, batch_size=300
    )
    counts = extract_msmarco(cfg, tmp_path, load=loader(source))
    assert counts["triples"] == 800 and counts["qrels"] >= 1765
    cands = io.read_table(tmp_path / "candidates.parquet", schemas.CANDIDATES)
    per_query = cands.group_by("query_id").len()["len"]
    assert per_query.len() > 1700 and per_query.max() == 5
    # the planted relevant passage is BM25's first candidate for most queries
    qrels = io.read_table(tmp_path / "qrels.parquet", schemas.QRELS)
    top = cands.filter(pl.col("rank") == 1).join(qrels, on=["query_id", "doc_id"])
    assert top.height > 1000
    corpus = io.read_table(tmp_path / "corpus.parquet", schemas.CORPUS)
    triples = io.read_table(tmp_path / "triples.parquet", schemas.TRIPLES)
    needed = set(triples["pos_doc_id"]) | set(triples["neg_doc_id"]) | set(cands["doc_id"])
    assert set(corpus["doc_id"]) == needed


TREC_FAIR_CHECK = """
import json
import ir_datasets
from pipeline.data.trec_fair_articles import read_articles
ds = ir_datasets.load("trec-fair/2022/train")
queries = list(ds.queries_iter())
qrels = list(ds.qrels_iter())
ids = sorted({q.doc_id for q in qrels})[::10] + ["0"]
ours = {d.doc_id: d for d in read_articles(ds, ids)}
theirs = ds.docs_store().get_many(ids)
print(json.dumps({
    "queries": len(queries), "qrels": len(qrels), "same": ours == theirs, "found": len(ours),
    "with_gender": sum(d.gender_category is not None for d in ours.values()),
    "text_bytes": sum(len(d.text.encode()) for d in ours.values()),
}))
"""


def test_trec_fair_source_is_read_by_the_real_ir_datasets(tmp_path: Path) -> None:
    """The synthetic TREC Fair 2022 at 1/10,000 of its size: the real ir_datasets (a fresh
    process with IR_DATASETS_HOME on it) reads its queries, qrels and articles, and the
    pipeline's streaming reader agrees with ir_datasets' docstore."""
    meta = gen_fair(FairGenConfig(scale=1e-4, paragraphs=500, chunk=200), tmp_path)
    assert meta["articles"] == 648 and meta["metadata"] == 646 and meta["qrels"] >= 200
    env = {**os.environ, "IR_DATASETS_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", TREC_FAIR_CHECK], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["queries"] == 50 and out["qrels"] == meta["qrels"] and out["same"]
    assert out["found"] > 10 and out["with_gender"] >= out["found"] - 2  # 2 lack metadata
    assert 1000 < out["text_bytes"] / out["found"] < 20_000  # a few KB an article


@pytest.mark.slow
def test_trec_fair_rehearsal_runs_extract_and_the_docstore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """benchmarks/README.md's TREC Fair command at 1/10,000 of the size: both measured
    processes succeed and the table has their rows."""
    from benchmarks.rehearsal import trec_fair

    monkeypatch.setenv("IR_DATASETS_HOME", os.environ["IR_DATASETS_HOME"])  # the runner sets it
    trec_fair.main(["--scale", "0.0001", "--docstore-at", "0.0001", "--work", str(tmp_path)])
    result = json.loads((tmp_path / "results" / "trec_fair.json").read_text())["results"][0]
    assert [(s["name"], s["rc"]) for s in result["stages"]] == [
        ("generate", 0), ("extract", 0), ("docstore", 0)
    ]  # fmt: skip
    corpus = pl.read_parquet(tmp_path / "run-trec-fair-0.0001" / "data" / "corpus.parquet")
    assert corpus.height > 50
    table = (tmp_path / "results" / "trec_fair.md").read_text()
    assert "| 0.0001 | 648 |" in table and "| docstore |" in table
