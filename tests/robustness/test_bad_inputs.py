"""Every bad input is answered with one clear error naming the file/key/line and the fix.

Only cases the unit tests do not cover yet (see tests/unit: malformed word lists and LIWC
dictionaries, unknown method/loss/ordering/metric names, NaN runs in `EvalInputs`, truncated
Parquet in `io`, ...).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline import io, schemas
from pipeline.data.grep_biasir import RESOURCE_DIR, GrepBiasIRError, load_grep_biasir
from pipeline.params import ParamsError, parse_params
from pipeline.retrieval.bm25 import bm25_topk
from tests.stages.conftest import ROOT, run

DOCS_CSV = "queries-documents_Career.csv"


@pytest.fixture()
def grep_copy(tmp_path: Path) -> Path:
    root = tmp_path / "grep"
    shutil.copytree(RESOURCE_DIR, root)
    return root


# --- Grep-BiasIR CSVs ------------------------------------------------------------------------


def _truncated_csv(root: Path, where: str) -> None:
    """Cut the documents CSV in its 40th row: inside the quoted document text, or inside
    the last column (the row then still has 8 fields)."""
    f = root / DOCS_CSV
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    row = lines[40]
    cut = row.index(',"') + 12 if where == "document" else len(row) - 8
    f.write_text("".join(lines[:40]) + row[:cut], encoding="utf-8")


def test_csv_truncated_in_a_quoted_text_names_file_and_line(grep_copy: Path) -> None:
    _truncated_csv(grep_copy, "document")
    with pytest.raises(
        GrepBiasIRError, match=rf"{re.escape(DOCS_CSV)}, line 41: expected 8 fields .*quoting"
    ):
        load_grep_biasir(grep_copy)


def test_csv_truncated_in_the_last_column_names_file(grep_copy: Path) -> None:
    _truncated_csv(grep_copy, "last column")
    with pytest.raises(GrepBiasIRError, match=rf"{re.escape(DOCS_CSV)}.*truncated"):
        load_grep_biasir(grep_copy)


def test_duplicate_doc_id_in_grep_biasir_names_file_and_line(grep_copy: Path) -> None:
    f = grep_copy / DOCS_CSV
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    f.write_text("".join(lines) + lines[1], encoding="utf-8")
    first_id = lines[1].split(",")[1]
    with pytest.raises(
        GrepBiasIRError,
        match=rf"{re.escape(DOCS_CSV)}, line {len(lines) + 1}: duplicate d_id '{first_id}'",
    ):
        load_grep_biasir(grep_copy)


def test_duplicate_query_id_in_grep_biasir_names_file_and_line(grep_copy: Path) -> None:
    f = grep_copy / "queries.csv"
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    f.write_text("".join(lines) + "0,Appearance,another query\n", encoding="utf-8")
    with pytest.raises(
        GrepBiasIRError, match=rf"queries\.csv, line {len(lines) + 1}: duplicate q_id '0'"
    ):
        load_grep_biasir(grep_copy)


# --- Parquet and TREC artifacts --------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "columns", "key"),
    [
        (schemas.CORPUS, {"doc_id": ["a", "a"], "text": ["x", "y"]}, r"\('doc_id',\)"),
        (
            schemas.QUERIES,
            {"query_id": ["1", "1"], "text": ["x", "y"], "split": ["test", "test"]},
            r"\('query_id',\)",
        ),
        (
            schemas.QRELS,
            {"query_id": ["1", "1"], "doc_id": ["a", "a"], "relevance": [1, 0]},
            r"\('query_id', 'doc_id'\)",
        ),
    ],
    ids=["corpus", "queries", "qrels"],
)
def test_duplicate_ids_on_read_name_the_file(
    tmp_path: Path, schema: schemas.Schema, columns: dict[str, list[Any]], key: str
) -> None:
    path = tmp_path / f"{schema.name}.parquet"
    pq.write_table(pa.table(columns), path)  # written by another tool: no validation
    with pytest.raises(
        schemas.SchemaError, match=rf"{re.escape(path.name)}: 1 duplicate {key} keys.*Dedupl"
    ):
        io.read_table(path, schema)


@pytest.mark.parametrize(
    "text", ["q1 Q0 a 1 1.0 t\nq1 Q0 b 2", "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 x t\n"], ids=str.split
)
def test_bad_trec_line_is_named(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run.trec"
    path.write_text(text)
    with pytest.raises(
        io.ArtifactError, match=r"run\.trec: malformed TREC run: line 2 .*qid Q0 docid rank score"
    ):
        io.read_trec_run(path)


def test_bm25_refuses_an_empty_corpus() -> None:
    empty = pl.DataFrame(schema={"doc_id": pl.String, "text": pl.String})
    queries = pl.DataFrame({"query_id": ["1"], "text": ["nurse"]})
    with pytest.raises(ValueError, match=r"corpus is empty; check the extract stage"):
        bm25_topk(empty, queries, k=5)


def test_empty_corpus_is_rejected_on_read(tmp_path: Path) -> None:
    path = tmp_path / "corpus.parquet"
    pq.write_table(
        pa.table({"doc_id": pa.array([], pa.string()), "text": pa.array([], pa.string())}), path
    )
    with pytest.raises(schemas.SchemaError, match=r"corpus\.parquet: .*empty.*at least one"):
        io.read_table(path, schemas.CORPUS)


# --- params.yaml -----------------------------------------------------------------------------


def _params(section: str, key: str, value: object) -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw[section][key] = value
    return raw


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        ("train", "lr", -0.001, r"'train\.lr': -0\.001 is out of range"),
        ("train", "lr", 0, r"'train\.lr': 0 is out of range \(0, ∞\]"),
        ("candidates", "top_k", 0, r"'candidates\.top_k': 0 is out of range \[1, "),
        ("train", "batch_size", "16", r"'train\.batch_size': expected int, got '16'"),
    ],
)
def test_out_of_range_or_ill_typed_param_names_the_key(
    section: str, key: str, value: object, message: str
) -> None:
    with pytest.raises(ParamsError, match=message):
        parse_params(_params(section, key, value))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("awrf", {"target": "bogus"}, r"'evaluate\.awrf\.target'.*'bogus'.*'uniform', 'relevant'"),
        ("cutoffs", [0], r"'evaluate\.cutoffs': \[0\] is out of range"),
    ],
)
def test_evaluate_params_are_checked_on_load(key: str, value: object, message: str) -> None:
    with pytest.raises(ParamsError, match=message):
        parse_params(_params("evaluate", key, value))


# --- stages: one ERROR line on stderr, exit status 1, no traceback ----------------------------


@pytest.fixture(scope="module")
def stage_repo(tiny_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("bad") / "repo"
    shutil.copytree(tiny_repo, repo)
    return repo


@pytest.fixture()
def restored(stage_repo: Path, tmp_path: Path) -> Iterator[Path]:
    """The copied repository; every data/run file a test breaks is put back afterwards."""
    saved = tmp_path / "saved"
    for folder in ("data", "runs"):
        shutil.copytree(stage_repo / folder, saved / folder)
    yield stage_repo
    for folder in ("data", "runs"):
        shutil.rmtree(stage_repo / folder)
        shutil.copytree(saved / folder, stage_repo / folder)


def _stage(repo: Path, *args: str) -> str:
    """Run `python -m stages.<...>`; assert the clean failure; return its ERROR line."""
    proc: subprocess.CompletedProcess[str] = run([sys.executable, "-m", *args], repo, check=False)
    errors = [line for line in proc.stderr.splitlines() if " ERROR " in line]
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr[-2000:]
    return errors[0]


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _nan_score(path: Path) -> None:
    run_ = pl.read_parquet(path)
    nan = pl.when(pl.int_range(pl.len()) == 2).then(float("nan")).otherwise(pl.col("score"))
    run_.with_columns(nan.alias("score")).write_parquet(path)


def _stopword_query(path: Path) -> None:
    queries = pl.read_parquet(path)
    first = queries.filter(pl.col("split") == "test")["query_id"].sort()[0]
    text = pl.when(pl.col("query_id") == first).then(pl.lit("the of and")).otherwise("text")
    queries.with_columns(text.alias("text")).write_parquet(path)


Breaker = Callable[[Path], None]
STAGE_CASES: list[tuple[str, Breaker, tuple[str, ...], str]] = [
    (
        "data/candidates.parquet",
        _truncate,
        ("stages.evaluate", "baseline"),
        r"data/candidates\.parquet: not a readable Parquet file .*doctor --fix.*dvc repro",
    ),
    (
        "runs/baseline/run.parquet",
        _nan_score,
        ("stages.evaluate", "baseline"),
        r"1 rows with (a )?non-finite \(NaN/inf\).*'doc_id': '[^']+'.*(drop|Fix)",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "breaker", "command", "message"),
    STAGE_CASES,
    ids=["truncated-candidates", "nan-run"],
)
def test_stage_answers_bad_artifact_with_one_line(
    restored: Path, target: str, breaker: Breaker, command: tuple[str, ...], message: str
) -> None:
    breaker(restored / target)
    assert re.search(message, _stage(restored, *command))


@pytest.mark.slow
def test_query_without_bm25_match_is_still_evaluated(restored: Path) -> None:
    """Every query is evaluated (SPEC §7): one BM25 cannot match gets tied candidates."""
    _stopword_query(restored / "data/queries.parquet")
    proc = run([sys.executable, "-m", "stages.candidates"], restored, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"BM25: 1 of \d+ queries matched no document", proc.stderr), proc.stderr
    queries = pl.read_parquet(restored / "data/queries.parquet")
    candidates = pl.read_parquet(restored / "data/candidates.parquet")
    assert set(candidates["query_id"]) == set(queries["query_id"])


@pytest.mark.slow
def test_nan_run_error_names_the_file(restored: Path) -> None:
    _nan_score(restored / "runs/baseline/run.parquet")
    assert "runs/baseline/run.parquet" in _stage(restored, "stages.evaluate", "baseline")


@pytest.mark.slow
def test_score_stage_refuses_an_empty_corpus(restored: Path) -> None:
    corpus = restored / "data/corpus.parquet"
    pl.read_parquet(corpus).head(0).write_parquet(corpus)
    assert "data/corpus.parquet" in _stage(restored, "stages.score")
