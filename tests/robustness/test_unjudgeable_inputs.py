"""What cannot be judged is refused, not reported (issue 24's bad-input table).

Each row: a clear non-zero exit, one error line naming the file, the row and the fix, and no
changed or half-written output. `fair-eval` runs in-process on a hand-made collection; the
stage rows run the real stages on a copy of the tiny profile.

| input | before | now |
|---|---|---|
| run whose documents are all unknown to the corpus | exit 0, NFaiRR 1.0000 | exit 2 |
| run whose queries are all unknown to the qrels | exit 0 | exit 2 |
| either, with `--allow-partial` | — | exit 0, `judged_*` in the output |
| corpus whose `group` values are all unknown | ZeroDivisionError | exit 2, the row |
| corpus whose texts are all empty | exit 0, ARaB 0, NFaiRR 1 | exit 2 |
| null `text` in the corpus (fair-eval) | wrong or a TypeError | exit 2 |
| null `text` in `data/corpus.parquet` (features) | tokenizer TypeError | exit 1 |
| unknown `group` label in `data/corpus.parquet` (evaluate) | silently dropped | exit 1 |
| every text empty in `data/corpus.parquet` (score) | exit 0 | exit 1 |
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from pipeline.evaluate_run import main
from pipeline.metrics.awrf import awrf
from pipeline.metrics.inputs import EvalInputs
from tests.robustness.test_bad_inputs import _stage

DOCS = {f"d{i}": ("she is a nurse", "he is a pilot", "the weather is mild")[i % 3]
        for i in range(6)}  # fmt: skip
GROUPS = {f"d{i}": "FMN"[i % 3] for i in range(6)}


def _write(folder: Path, corpus: pl.DataFrame, run_rows: list[tuple[str, str]]) -> list[str]:
    """Files of a collection; the argv of `fair-eval` on them (JSON to `out.json`)."""
    corpus.write_parquet(folder / "corpus.parquet")
    (folder / "qrels.txt").write_text("q1 0 d0 1\nq2 0 d1 1\n")
    lines = [f"{q} Q0 {d} {r} {10 - r} t" for r, (q, d) in enumerate(run_rows, start=1)]
    (folder / "run.trec").write_text("\n".join(lines) + "\n")
    files = {"--qrels": "qrels.txt", "--corpus": "corpus.parquet", "--out": "out.json"}
    argv = [str(folder / "run.trec"), "--cutoffs", "10"]
    return argv + [x for flag, name in files.items() for x in (flag, str(folder / name))]


def _corpus(**columns: list[object]) -> pl.DataFrame:
    base: dict[str, list[object]] = {"doc_id": list(DOCS), "text": list(DOCS.values()),
                                     "group": list(GROUPS.values())}  # fmt: skip
    return pl.DataFrame({**base, **columns}, schema_overrides={"text": pl.String})


RUN = [(q, d) for q in ("q1", "q2") for d in DOCS]


def _refused(argv: list[str], caplog: pytest.LogCaptureFixture, out: Path) -> str:
    """`fair-eval` exits 2 with one ERROR line; the existing `--out` file is untouched."""
    out.write_text('{"old": 1}\n')
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(argv) == 2
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert out.read_text() == '{"old": 1}\n'
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".")) == []
    return errors[0]


@pytest.mark.parametrize("unknown", [8, 12])  # of 12: 6 (half) is still judged
def test_run_of_documents_unknown_to_the_corpus_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, unknown: int
) -> None:
    rows = [(q, f"x{d}" if i < unknown // 2 else d) for q in ("q1", "q2")
            for i, d in enumerate(DOCS)]  # fmt: skip
    argv = _write(tmp_path, _corpus(), rows)
    line = _refused(argv, caplog, tmp_path / "out.json")
    assert re.search(
        rf"run\.trec: {unknown} of 12 documents in the run's top 10 are not in the corpus "
        r".*corpus\.parquet or have an empty text \(first 'xd0'\); they cannot be judged\. "
        r"Fix: check that the run and the corpus are of the same collection.*--allow-partial",
        line,
    ), line


def test_allow_partial_evaluates_and_says_how_much_was_judged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [(q, f"x{d}" if i < 4 else d) for q in ("q1", "q2") for i, d in enumerate(DOCS)]
    argv = _write(tmp_path, _corpus(), rows)
    assert main([*argv, "--allow-partial"]) == 0
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["judged_docs"] == pytest.approx(4 / 12)
    assert "judged_queries" not in result  # every query has qrels
    assert re.search(r"judged_docs\s+0\.3333", capsys.readouterr().out)
    # a run judged in full carries no such key (its JSON keys are the pipeline's)
    assert main(_write(tmp_path, _corpus(), RUN)) == 0
    assert "judged_docs" not in json.loads((tmp_path / "out.json").read_text())


def test_run_of_queries_unknown_to_the_qrels_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    argv = _write(tmp_path, _corpus(), [(f"z{q}", d) for q, d in RUN])
    line = _refused(argv, caplog, tmp_path / "out.json")
    assert re.search(
        r"2 of 2 queries of the run have no judgment in the qrels .*qrels\.txt \(first 'zq1'\).*"
        r"Fix: check that the qrels are of the run's topics.*--allow-partial",
        line,
    ), line
    assert main([*argv, "--allow-partial"]) == 0
    assert json.loads((tmp_path / "out.json").read_text())["judged_queries"] == 0.0


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (["X"] * 6, r"6 documents have an unknown `group` label, first doc_id 'd0' with 'X'"),
        (["F", "m", "N"] * 2, r"2 documents .* first doc_id 'd1' with 'm' \(did you mean 'M'\?\)"),
    ],
    ids=["all-unknown", "lowercase"],
)
def test_unknown_group_labels_are_refused_with_the_row(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, labels: list[str], message: str
) -> None:
    argv = _write(tmp_path, _corpus(group=labels), RUN)
    line = _refused(argv, caplog, tmp_path / "out.json")
    assert re.search(rf"corpus\.parquet: {message}.*Use F, M or N", line), line


def test_awrf_without_a_labelled_document_is_an_error_not_a_division_by_zero() -> None:
    run_ = pl.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0], "rank": [1]})
    groups = pl.DataFrame(schema={"doc_id": pl.String, "group": pl.String})
    with pytest.raises(ValueError, match=r"awrf: doc_groups holds no labelled document"):
        awrf(EvalInputs(run_, doc_groups=groups), (10,))


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ([""] * 6, r"every one of the 6 'text' values is empty"),
        (["a", None, "b", "c", "d", "e"], r"1 rows have a null 'text', first \{'doc_id': 'd1'\}"),
    ],
    ids=["empty", "null"],
)
def test_corpus_without_texts_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, texts: list[str | None], message: str
) -> None:
    argv = _write(tmp_path, _corpus(text=texts), RUN)  # type: ignore[arg-type]
    line = _refused(argv, caplog, tmp_path / "out.json")
    assert re.search(rf"corpus\.parquet: {message}", line), line


# --- the pipeline's stages -------------------------------------------------------------------


@pytest.fixture(scope="module")
def stage_repo(tiny_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("unjudged") / "repo"
    shutil.copytree(tiny_repo, repo, symlinks=True)
    return repo


@pytest.fixture()
def corpus(stage_repo: Path, tmp_path: Path) -> Iterator[Path]:
    """data/corpus.parquet of the copy, put back after the test."""
    path = stage_repo / "data/corpus.parquet"
    shutil.copy(path, tmp_path / "corpus.parquet")
    yield path
    shutil.copy(tmp_path / "corpus.parquet", path)


def _unchanged(repo: Path, *names: str) -> dict[str, bytes]:
    return {n: (repo / n).read_bytes() for n in names}


STAGE_CASES = [
    ("null-text", ("stages.features",), "data/features.safetensors",
     lambda c: c.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(None)
                              .otherwise(pl.col("text")).alias("text")),
     r"data/corpus\.parquet: 1 rows have a null 'text', first \{'doc_id': '[^']+'\} \(row 3\)"),
    ("unknown-group", ("stages.evaluate", "baseline"), "metrics/baseline.json",
     lambda c: c.with_columns(pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("X"))
                              .otherwise(pl.col("group")).alias("group")),
     r"data/corpus\.parquet: 1 documents have an unknown `group` label, first doc_id '[^']+' "
     r"with 'X'"),
    ("empty-texts", ("stages.score",), "data/doc_scores.parquet",
     lambda c: c.with_columns(pl.lit("").alias("text")),
     r"data/corpus\.parquet: every one of the \d+ 'text' values is empty"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("name", "stage", "output", "breaker", "message"), STAGE_CASES,
                         ids=[c[0] for c in STAGE_CASES])  # fmt: skip
def test_stage_refuses_a_corpus_it_cannot_read(
    stage_repo: Path, corpus: Path, name: str, stage: tuple[str, ...], output: str,
    breaker: object, message: str,
) -> None:  # fmt: skip
    assert callable(breaker)
    breaker(pl.read_parquet(corpus)).write_parquet(corpus)
    before = _unchanged(stage_repo, output)
    line = _stage(stage_repo, *stage)
    assert re.search(message, line), line
    assert _unchanged(stage_repo, output) == before
    assert not list((stage_repo / output).parent.glob(".*.tmp"))
