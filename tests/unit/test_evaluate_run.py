"""`python -m pipeline.evaluate_run` on a shipped EDBT 2022 run with a fake corpus and qrels."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline import io
from pipeline.evaluate_run import main, read_corpus, read_qrels, read_queries

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "pipeline/resources/runs/edbt2022/inference_bert-mini.trec.gz"
QUERIES = ["20801", "21049", "21232"]


@pytest.fixture(scope="module")
def ranked() -> pl.DataFrame:
    return io.read_trec_run(RUN).filter(pl.col("query_id").is_in(QUERIES))


@pytest.fixture()
def files(tmp_path: Path, ranked: pl.DataFrame) -> dict[str, Path]:
    """Corpus: the rank-1 passage of each query is "he is here", every other one neutral;
    qrels: the rank-2 passage is relevant; queries: the three ids with texts."""
    top = ranked.filter(pl.col("rank") == 1)["doc_id"].to_list()
    docs = ranked["doc_id"].unique(maintain_order=True).to_list()
    lines = [f"{d}\t{'he is here' if d in top else 'the text is plain'}" for d in docs]
    paths = {"corpus": tmp_path / "corpus.tsv", "qrels": tmp_path / "qrels.txt"}
    paths["corpus"].write_text("\n".join(lines) + "\n")
    second = ranked.filter(pl.col("rank") == 2)
    paths["qrels"].write_text(
        "".join(f"{q} 0 {d} 1\n" for q, d in zip(second["query_id"], second["doc_id"], strict=True))
    )
    paths["queries"] = tmp_path / "queries.jsonl"
    texts = ["what is a cat", "how do tides form near the moon", "define rain"]
    paths["queries"].write_text(
        "".join(
            json.dumps({"qid": q, "text": t}) + "\n" for q, t in zip(QUERIES, texts, strict=True)
        )
    )
    return paths


def test_no_ties_in_the_top_ranks(ranked: pl.DataFrame) -> None:
    top = ranked.filter(pl.col("rank") <= 11)
    assert top.select("query_id", "score").is_unique().all()  # hand values assume no ties


def test_cli_prints_the_table_and_writes_json(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.json"
    argv = [str(RUN), "--qrels", str(files["qrels"]), "--corpus", str(files["corpus"]),
            "--queries", str(files["queries"]), "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "RR (MRR)" in printed and "@10" in printed and "ARaB-tc-abs" in printed
    result = json.loads(out.read_text())
    assert result["n_queries"] == 3 and result["tokenizer"] == "words"
    assert result["MRR@10"] == pytest.approx(0.5)  # relevant at rank 2 everywhere
    # male tc = 1 at rank 1 only: RaB@t = 1/t, ARaB@10 = H_10 / 10 (male − female, signed)
    h10 = sum(1 / t for t in range(1, 11))
    assert result["ARaB-tc@10"] == pytest.approx(h10 / 10)
    assert result["ARaB-tf@10"] == pytest.approx(math.log(2) * h10 / 10)
    assert result["ARaB-tc@20"] == pytest.approx(sum(1 / t for t in range(1, 21)) / 20)
    # LIWC@10 = |mean over the top 10 of (lex_f − lex_m)| × 100 = (1/3) / 10 × 100
    assert result["LIWC@10"] == pytest.approx(100 / 30)
    # one gendered word: ζ = 1 for every passage, so FaiRR = IFaiRR
    assert result["NFaiRR@10"] == pytest.approx(1.0)
    assert "AWRF@10" not in result and "gap-mean" not in result  # no F/M/N groups
    assert "var.nDCG@10.mean" in result  # the queries' texts give the complexity bins


@pytest.mark.slow
def test_console_script_module_runs(files: dict[str, Path]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.evaluate_run", str(RUN), "--qrels", str(files["qrels"]),
         "--corpus", str(files["corpus"]), "--queries", str(files["queries"]), "--cutoffs", "10"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split() == ["metric", "@10"]


def test_bad_files_give_clear_errors(tmp_path: Path, files: dict[str, Path]) -> None:
    bad = tmp_path / "bad_qrels.txt"
    bad.write_text("1 0 d1 1\n1 d2 1\n")
    with pytest.raises(io.ArtifactError, match=r"bad_qrels.txt: line 2 is not a TREC qrels line"):
        read_qrels(bad)
    tsv = tmp_path / "c.tsv"
    tsv.write_text("d1\tsome text\nd2\n")
    with pytest.raises(io.ArtifactError, match=r"c.tsv: line 2 has 1 tab-separated fields"):
        read_corpus(tsv)
    pq = tmp_path / "c.parquet"
    pl.DataFrame({"doc_id": ["a"], "body_text": ["x"]}).write_parquet(pq)
    with pytest.raises(io.ArtifactError, match=r"c.parquet: the corpus has no 'text' column"):
        read_corpus(pq)
    with pytest.raises(io.ArtifactError, match=r"nope\.tsv: corpus file not found"):
        read_corpus(tmp_path / "nope.tsv")
    other = tmp_path / "q.tsv"
    other.write_text("999\tunknown query\n")
    argv = [str(RUN), "--qrels", str(files["qrels"]), "--corpus", str(files["corpus"]),
            "--queries", str(other)]  # fmt: skip
    assert main(argv) == 2


def test_readers_accept_jsonl_parquet_and_headers(tmp_path: Path) -> None:
    jl = tmp_path / "c.jsonl"
    jl.write_text(
        '{"_id": "d1", "text": "a", "group": "F"}\n{"_id": "d2", "text": "b", "group": "M"}\n'
    )
    corpus = read_corpus(jl)
    assert corpus.columns == ["doc_id", "text", "group"]
    assert corpus["doc_id"].to_list() == ["d1", "d2"]
    tsv = tmp_path / "c.tsv"
    tsv.write_text("docno\ttext\nd1\thello\n")
    assert read_corpus(tsv).row(0) == ("d1", "hello")
    pq = tmp_path / "q.parquet"
    pl.DataFrame({"query_id": ["1"], "doc_id": ["d1"], "relevance": [2]}).write_parquet(pq)
    assert read_qrels(pq).row(0) == ("1", "d1", 2)
    q = tmp_path / "q.tsv"
    q.write_text("1\n2\n")
    assert read_queries(q)["query_id"].to_list() == ["1", "2"]
