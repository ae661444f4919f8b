"""MS MARCO extraction through the real ir_datasets on miniature files in its formats
(`tests/irds_miniature.py`), offline; fakes only where the real library cannot reach (a
triples stream of a given length, a million rows for the memory bound)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from subprocess import PIPE

import ir_datasets
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
    TABLES,
    TRIPLES_ID,
    MsmarcoConfig,
    dev_qrels,
    extract_msmarco,
    load_query_set,
    msmarco_tables,
    sample_stream,
    select_rows,
    write_triples,
)
from pipeline.retrieval.bm25 import PackedDocs, bm25_over_docs, bm25_topk
from tests.conftest import Miniature, NoNetwork
from tests.unit.irds_fakes import FakeDataset, loader, pairs, train_queries

REPO = Path(__file__).resolve().parents[2]


def fake_msmarco(n_triples: int = 1000) -> dict:
    """A fake triples stream for what the real library cannot reach: any length, with a
    `docpairs_count` of that length (the real one returns the full file's 39,780,811)."""
    pairs_of = FakeDataset(queries=train_queries(), pairs=pairs(n_triples), pairs_count=n_triples)
    return {TRIPLES_ID: pairs_of}


def test_extract_through_ir_datasets_writes_schema_valid_files(
    tmp_path: Path, miniature: Miniature, no_network: NoNetwork
) -> None:
    """The real ir_datasets reads the miniature cache: the first triples in file order,
    their training queries (non-ASCII text), the 215 set, the shipped run's top 5, deduplicated
    dev qrels of the set, and every needed passage with its encoding repaired."""
    cfg = MsmarcoConfig(n_triples=100, candidates_k=5, batch_size=30)
    counts = extract_msmarco(cfg, tmp_path)
    tables = {name: io.read_table(tmp_path / f"{name}.parquet", s) for name, s in TABLES.items()}
    mini = miniature.msmarco
    assert counts["triples"] == 100
    assert pq.ParquetFile(tmp_path / "triples.parquet").num_row_groups == 4  # 30-row batches
    triples = tables["triples"]
    assert triples.select("query_id", "pos_doc_id", "neg_doc_id").rows() == mini.triples[:100]
    assert set(triples["source"]) == {"triples-small"}
    queries = tables["queries"]
    test = queries.filter(pl.col("split") == "test")
    assert test.height == 215 and set(test["set"]) == {"msmarco-215"}
    train = dict(queries.filter(pl.col("split") == "train").select("query_id", "text").rows())
    assert train == {q: mini.train_queries[q] for q in triples["query_id"]}
    assert "what is a café" in train.values()
    cands = tables["candidates"]
    assert cands.group_by("query_id").len()["len"].to_list() == [5] * 215
    needed = set(triples["pos_doc_id"]) | set(triples["neg_doc_id"]) | set(cands["doc_id"])
    corpus = dict(tables["corpus"].rows())
    assert corpus == {d: mini.passages[d] for d in needed}
    assert corpus[mini.mojibake_pid] == "the café on the river"  # FixEncoding, as in MS MARCO
    qrels = tables["qrels"]
    in215 = set(test["query_id"])
    assert qrels.rows() == sorted((q, d, 1) for q, d in mini.relevant.items() if q in in215)


def test_shipped_candidates_are_the_bm25_run_top_k(
    miniature: Miniature, no_network: NoNetwork
) -> None:
    tables = msmarco_tables(MsmarcoConfig(n_triples=10, candidates_k=3))
    first = tables["candidates"].filter(pl.col("query_id") == "20801").sort("rank")
    assert first["doc_id"].to_list() == ["4728169", "7349794", "3044965"]  # file's first lines
    assert first["score"].to_list() == pytest.approx([10.354, 10.1069, 9.7395])


def test_real_docpairs_count_is_the_full_files_so_a_sample_needs_it_all(
    tmp_path: Path, miniature: Miniature, no_network: NoNetwork
) -> None:
    """ir_datasets answers `docpairs_count()` from its metadata (39,780,811 triples), so a
    seeded sample draws rows across the whole real file; on a shorter file it stops with the
    truncation message, before anything is written."""
    assert ir_datasets.load(TRIPLES_ID).docpairs_count() == 39_780_811
    cfg = MsmarcoConfig(n_triples=50, triples_sample="sample")
    with pytest.raises(ValueError, match=r"stream ended before row .*truncated"):
        write_triples(ir_datasets.load, cfg, tmp_path / "t.parquet")
    assert not (tmp_path / "t.parquet").exists()


def test_dev_and_dev_small_read_through_ir_datasets(
    miniature: Miniature, no_network: NoNetwork
) -> None:
    """`msmarco-passage/dev` qrels (`dev/qrels`) and `dev/small` (members of
    collectionandqueries.tar.gz) are the planted ones; the 215 and 1,765 sets are disjoint
    from dev/small in the real data and here."""
    mini = miniature.msmarco
    dev = ir_datasets.load(DEV_ID)
    assert [(q.query_id, q.doc_id, q.relevance) for q in dev.qrels_iter()] == mini.dev_qrels
    qrels = dev_qrels(ir_datasets.load, set(mini.relevant))
    assert qrels.height == len(mini.relevant)  # the duplicate judgement is merged
    small = ir_datasets.load("msmarco-passage/dev/small")
    assert {q.query_id: q.text for q in small.queries_iter()} == mini.dev_small_queries
    got = [(q.query_id, q.doc_id, q.relevance) for q in small.qrels_iter()]
    assert got == mini.dev_small_qrels
    assert not set(mini.dev_small_queries) & set(load_query_set("1765")["query_id"])


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


def test_bm25_candidates_over_the_collection_match_bm25_topk(
    miniature: Miniature, no_network: NoNetwork
) -> None:
    words = ["women career", "men nursing jobs", "salary of a nurse", "engineer", "his", "career"]
    docs = [GenericDoc(f"d{i}", f"{words[i % 6]} {words[(i * 7) % 6]} text {i}") for i in range(40)]
    queries = pl.DataFrame({"query_id": ["a", "b", "c"], "text": ["nurse salary", "career", "zzz"]})
    ours = bm25_over_docs(((d.doc_id, d.text) for d in docs), queries, k=7)
    corpus = pl.DataFrame({"doc_id": [d.doc_id for d in docs], "text": [d.text for d in docs]})
    ref = bm25_topk(corpus, queries, k=7)
    assert ours.select("query_id", "doc_id", "rank").equals(
        ref.select("query_id", "doc_id", "rank")
    )
    assert ours["score"].to_list() == pytest.approx(ref["score"].to_list(), rel=1e-5)
    # the 1,765 set: bm25s over the whole ir_datasets collection finds each planted passage
    tables = msmarco_tables(MsmarcoConfig(n_triples=5, query_set="1765", candidates_k=4))
    cands = tables["candidates"]
    assert cands["rank"].max() <= 4  # type: ignore[operator]
    assert set(tables["corpus"]["doc_id"]) >= set(cands["doc_id"])
    planted = {(q, d) for q, d in miniature.msmarco.relevant.items() if int(d) >= 9_000_000}
    top1 = set(cands.filter(pl.col("rank") == 1).select("query_id", "doc_id").rows())
    assert len(planted & top1) >= 0.9 * len(planted)


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


EXTRACT = (
    "from stages.common import run_stage\n"
    "from pipeline.data.msmarco import MsmarcoConfig, extract_msmarco\n"
    "run_stage(lambda _: extract_msmarco(MsmarcoConfig(n_triples=10), 'out'))\n"
)


def python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter (ir_datasets reads `IR_DATASETS_HOME` at import)."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    cmd = [sys.executable, "-c", code]
    return subprocess.run(cmd, cwd=cwd, env=full, capture_output=True, text=True, timeout=300)


def test_download_error_inside_ir_datasets_becomes_a_clear_error(
    tmp_path: Path, miniature: Miniature, no_network: NoNetwork
) -> None:
    """A cache that lacks the dev qrels: the real ir_datasets tries to download them, the
    connection fails, and the stage ends with one line saying what to fetch; nothing is
    written."""
    home = tmp_path / "home"
    triples = home / "msmarco-passage" / "train" / "small.triples.qidpid.tsv"
    triples.parent.mkdir(parents=True)
    shutil.copy(miniature.home / "msmarco-passage" / "train" / triples.name, triples)
    env = no_network.env
    env["PYTHONPATH"] += os.pathsep + str(REPO)
    proc = python(EXTRACT, tmp_path, IR_DATASETS_HOME=str(home), IR_DATASETS_DL_TRIES="1", **env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert re.search(r"msmarco-passage/dev: could not read qrels .*Fix: on a machine", proc.stderr)
    assert any("msmarco.z22.web.core.windows.net" in a for a in no_network.logged())
    no_network.log.unlink()  # the attempt this test expects
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_non_utf8_locale_stops_with_the_fix(tmp_path: Path, miniature: Miniature) -> None:
    """ir_datasets decodes TSV files in the locale's encoding: under `LC_ALL=C PYTHONUTF8=0`
    reading a non-ASCII query raises `UnicodeDecodeError` inside ir_datasets; the extract
    stops before reading, with one line naming the fix, and then runs with it."""
    c_locale = {"LC_ALL": "C", "PYTHONUTF8": "0"}
    read = "import ir_datasets\nlist(ir_datasets.load('" + TRIPLES_ID + "').queries_iter())\n"
    proc = python(read, tmp_path, **c_locale)
    assert "UnicodeDecodeError" in proc.stderr, proc.stderr  # the library's behaviour
    proc = python(EXTRACT, tmp_path, **c_locale)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "'ANSI_X3.4-1968'" in proc.stderr and "Fix: rerun with PYTHONUTF8=1" in proc.stderr
    proc = python(EXTRACT, tmp_path, LC_ALL="C", PYTHONUTF8="1")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "corpus.parquet").exists()


def test_missing_docs_are_logged_and_skipped(
    miniature: Miniature, no_network: NoNetwork, caplog: pytest.LogCaptureFixture
) -> None:
    store = ir_datasets.load(COLLECTION_ID).docs_store()
    pid = miniature.msmarco.non_ascii_pid
    batches = list(irds.lookup_docs(store, [pid, "missing1", "8000000"], batch_size=2))
    assert [[d.doc_id for d in b] for b in batches] == [[pid], ["8000000"]]
    assert batches[0][0].text == miniature.msmarco.passages[pid]
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
    packed = PackedDocs()
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
