"""MS MARCO extraction through fake ir_datasets objects (no network, real namedtuples)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from subprocess import PIPE

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from ir_datasets.formats import GenericDoc, GenericDocPair, TrecQrel

from pipeline import io, schemas
from pipeline.data import irds
from pipeline.data.msmarco import (
    COLLECTION_ID,
    DEV_ID,
    TRIPLES_ID,
    MsmarcoConfig,
    extract_msmarco,
    load_query_set,
    msmarco_tables,
    sample_stream,
    select_rows,
    write_triples,
)
from pipeline.retrieval.bm25 import bm25_topk
from tests.unit.irds_fakes import FakeDataset, FakeStore, loader, pairs, passage, train_queries

REPO = Path(__file__).resolve().parents[2]


def fake_msmarco(n_triples: int = 1000, docs: list[GenericDoc] | None = None) -> dict:
    q215 = load_query_set("215")["query_id"].to_list()
    qrels = [TrecQrel(q, f"rel{q}", 1, "0") for q in q215[:3]] + [
        TrecQrel(q215[0], f"rel{q215[0]}", 1, "0"),  # duplicate judgement
        TrecQrel("999999999", "x", 1, "0"),  # not in the query set
    ]
    store = FakeStore(make=passage) if docs is None else None
    return {
        TRIPLES_ID: FakeDataset(
            queries=train_queries(), pairs=pairs(n_triples), pairs_count=n_triples
        ),
        DEV_ID: FakeDataset(qrels=qrels),
        COLLECTION_ID: FakeDataset(docs=docs, store=store),
    }


def test_extract_writes_schema_valid_files(tmp_path: Path) -> None:
    cfg = MsmarcoConfig(n_triples=1000, candidates_k=5, batch_size=300)
    counts = extract_msmarco(cfg, tmp_path, load=loader(fake_msmarco()))
    tables = {
        name: io.read_table(tmp_path / f"{name}.parquet", schema)
        for name, schema in [
            ("corpus", schemas.CORPUS),
            ("queries", schemas.QUERIES),
            ("qrels", schemas.QRELS),
            ("triples", schemas.TRIPLES),
            ("candidates", schemas.CANDIDATES),
        ]
    }
    assert counts["triples"] == 1000
    assert pq.ParquetFile(tmp_path / "triples.parquet").num_row_groups == 4  # 300-row batches
    triples = tables["triples"]
    assert triples.row(0) == ("t0", "p0", "n0", "triples-small")
    queries = tables["queries"]
    assert queries.filter(pl.col("split") == "test").height == 215
    assert set(queries.filter(pl.col("split") == "train")["query_id"]) == {
        f"t{i}" for i in range(50)
    }
    cands = tables["candidates"]
    assert cands.group_by("query_id").len()["len"].to_list() == [5] * 215
    needed = set(triples["pos_doc_id"]) | set(triples["neg_doc_id"]) | set(cands["doc_id"])
    assert set(tables["corpus"]["doc_id"]) == needed
    assert tables["corpus"]["text"][0].startswith("passage ")
    qrels = tables["qrels"]
    assert qrels.height == 3 and "999999999" not in qrels["query_id"].to_list()


def test_shipped_candidates_are_the_bm25_run_top_k(tmp_path: Path) -> None:
    tables = msmarco_tables(
        MsmarcoConfig(n_triples=10, candidates_k=3), load=loader(fake_msmarco(10))
    )
    first = tables["candidates"].filter(pl.col("query_id") == "20801").sort("rank")
    assert first["doc_id"].to_list() == ["4728169", "7349794", "3044965"]  # file's first lines
    assert first["score"].to_list() == pytest.approx([10.354, 10.1069, 9.7395])


def test_seeded_sample_is_exact_uniform_and_reproducible(tmp_path: Path) -> None:
    rows = select_rows(1000, 100, seed=3)
    assert rows.size == 100 and np.all(np.diff(rows) > 0)
    assert np.array_equal(rows, select_rows(1000, 100, seed=3))
    assert not np.array_equal(rows, select_rows(1000, 100, seed=4))
    picked = list(sample_stream(iter(range(1000)), rows))
    assert picked == rows.tolist()
    cfg = MsmarcoConfig(n_triples=100, triples_sample="sample", seed=3, batch_size=40)
    data = fake_msmarco(1000)
    n = write_triples(loader(data), cfg, tmp_path / "t.parquet")
    out = io.read_table(tmp_path / "t.parquet", schemas.TRIPLES)
    assert n == 100 and out["pos_doc_id"].to_list() == [f"p{i}" for i in rows]


def test_sample_larger_than_stream_is_rejected() -> None:
    with pytest.raises(ValueError, match="asked for 20 rows but the stream has 10"):
        select_rows(10, 20, seed=0)
    with pytest.raises(ValueError, match="stream ended before row 12"):
        list(sample_stream(iter(range(10)), np.array([2, 12])))


def test_bad_config_names_the_fix() -> None:
    with pytest.raises(ValueError, match=r"'query_set': unknown value '999'; known: \['215'"):
        MsmarcoConfig(query_set="999")  # type: ignore[arg-type]


def test_bm25_candidates_over_the_collection_match_bm25_topk(tmp_path: Path) -> None:
    words = ["women career", "men nursing jobs", "salary of a nurse", "engineer", "his", "career"]
    docs = [GenericDoc(f"d{i}", f"{words[i % 6]} {words[(i * 7) % 6]} text {i}") for i in range(40)]
    queries = pl.DataFrame({"query_id": ["a", "b", "c"], "text": ["nurse salary", "career", "zzz"]})
    ours = irds.bm25_over_docs(((d.doc_id, d.text) for d in docs), queries, k=7)
    corpus = pl.DataFrame({"doc_id": [d.doc_id for d in docs], "text": [d.text for d in docs]})
    ref = bm25_topk(corpus, queries, k=7)
    assert ours.select("query_id", "doc_id", "rank").equals(
        ref.select("query_id", "doc_id", "rank")
    )
    assert ours["score"].to_list() == pytest.approx(ref["score"].to_list(), rel=1e-5)
    cfg = MsmarcoConfig(n_triples=5, query_set="1765", candidates_k=4)
    tables = msmarco_tables(cfg, load=loader(fake_msmarco(5, docs=docs)))
    assert tables["candidates"]["rank"].max() <= 4  # type: ignore[operator]
    assert set(tables["corpus"]["doc_id"]) >= set(tables["candidates"]["doc_id"])


def test_offline_without_cache_fails_at_once_with_the_fix(tmp_path: Path) -> None:
    probed: list[str] = []

    def probe(host: str) -> str:
        probed.append(host)
        return f"{host} unreachable"

    with pytest.raises(
        irds.SourceUnavailableError,
        match=r"ir_datasets export msmarco-passage/dev qrels > /dev/null && ir_datasets export ",
    ):
        extract_msmarco(MsmarcoConfig(), tmp_path, probe=probe, home=tmp_path)
    assert len(probed) == 1  # one reachability probe, then the error: no download attempted
    assert not (tmp_path / "triples.parquet").exists()


def test_download_error_inside_ir_datasets_becomes_a_clear_error(tmp_path: Path) -> None:
    def broken() -> FakeDataset:
        raise ConnectionError("Failed to resolve 'msmarco.z22.web.core.windows.net'")

    data = fake_msmarco(10)
    data[TRIPLES_ID].pairs = broken
    with pytest.raises(irds.SourceUnavailableError, match=r"docpairs .*Fix: on a machine"):
        extract_msmarco(MsmarcoConfig(n_triples=10), tmp_path, load=loader(data))
    assert list(tmp_path.iterdir()) == []  # the temp file was removed


def test_missing_docs_are_logged_and_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FakeStore(make=passage)
    batches = list(irds.lookup_docs(store, ["a", "missing1", "b"], batch_size=2))
    assert [[d.doc_id for d in b] for b in batches] == [["a"], ["b"]]
    assert store.calls == [2, 1]
    assert "1 ids not in the docs store" in caplog.text


MEMORY_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    sys.path.insert(0, {repo!r})
    from pipeline.data.msmarco import MsmarcoConfig, TRIPLES_ID, write_triples
    from tests.unit.irds_fakes import FakeDataset, loader, pairs
    from pathlib import Path
    import pyarrow.parquet as pq
    def kib(field):
        for line in open("/proc/self/status"):
            if line.startswith(field):
                return int(line.split()[1])
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:  # reset the high-water mark: imports may peak above what the write needs
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    base = kib("VmRSS:")
    data = {{TRIPLES_ID: FakeDataset(pairs=pairs({n}), pairs_count={n})}}
    cfg = MsmarcoConfig(n_triples={n}, triples_sample={mode!r}, batch_size={batch})
    n = write_triples(loader(data), cfg, Path({out!r}))
    peak = kib("VmHWM:")
    print(json.dumps({{"rows": n, "growth_mb": (peak - base) / 1024,
                      "file_rows": pq.ParquetFile({out!r}).metadata.num_rows}}))
    """
)
# Peak RSS growth (VmHWM after resetting it, minus VmRSS before) of writing 10⁶ triples:
# measured ~110 MB (first) / ~156 MB (sample) with 50k-row batches, ~426 MB when the whole
# stream is one batch (the control case below).
MEMORY_BOUND_MB = 250


@pytest.mark.slow
def test_million_triples_stream_in_bounded_memory(tmp_path: Path) -> None:
    """Three fresh interpreters, one after another so they do not compete for memory: first-N
    and seeded sample with 50k-row batches stay under the bound; one 10⁶-row batch
    (everything in memory) does not, so the bound is not vacuous."""
    n = 1_000_000
    cases = {("first", 50_000): True, ("sample", 50_000): True, ("first", n): False}
    for (mode, batch), bounded in cases.items():
        out = str(tmp_path / f"{mode}-{batch}.parquet")
        script = MEMORY_SCRIPT.format(repo=str(REPO), n=n, mode=mode, batch=batch, out=out)
        cmd = [sys.executable, "-c", script]
        proc = subprocess.Popen(cmd, stdout=PIPE, stderr=PIPE, text=True)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr[-2000:]
        result = json.loads(stdout.strip().splitlines()[-1])
        assert result["rows"] == result["file_rows"] == n
        assert (result["growth_mb"] < MEMORY_BOUND_MB) == bounded, (mode, batch, result)


def test_triples_batches_use_the_real_docpair_fields() -> None:
    assert GenericDocPair._fields == ("query_id", "doc_id_a", "doc_id_b")
    assert TrecQrel._fields == ("query_id", "doc_id", "relevance", "iteration")


def test_version_marker_alone_is_not_a_cache(tmp_path: Path) -> None:
    folder = tmp_path / "msmarco-passage"
    (folder / "dev").mkdir(parents=True)
    (folder / "irds_version.txt").write_text("v2")
    assert not irds.has_cache(folder)
    with pytest.raises(irds.SourceUnavailableError, match="accept its terms"):
        irds.preflight([("msmarco-passage/dev", "qrels")], lambda host: "down", home=tmp_path)
    (folder / "dev" / "qrels.tsv").write_text("1 0 2 1\n")
    assert irds.has_cache(folder)
    irds.preflight([("msmarco-passage/dev", "qrels")], lambda host: "down", home=tmp_path)


def test_packed_token_ids_read_as_the_lists_and_index_the_same() -> None:
    import bm25s

    docs = [[3, 1, 4], [], [1, 5, 9, 2, 6], [5]]
    packed = irds.PackedDocs()
    for ids in docs:
        packed.append(ids)
    packed.freeze()
    assert len(packed) == 4 and list(packed) == docs and packed[-1] == [5] and packed[2] == docs[2]
    assert packed[1:3] == docs[1:3]
    with pytest.raises(IndexError):
        packed[4]
    vocab = {str(i): i for i in range(10)}
    plain, ours = bm25s.BM25(), bm25s.BM25()
    plain.index(bm25s.tokenization.Tokenized(ids=docs, vocab=vocab), show_progress=False)
    ours.index(bm25s.tokenization.Tokenized(ids=packed, vocab=vocab), show_progress=False)
    for query in (["1"], ["5", "9"], ["4", "2", "6"]):
        assert plain.get_scores(query).tolist() == ours.get_scores(query).tolist()
