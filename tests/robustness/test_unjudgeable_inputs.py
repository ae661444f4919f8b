"""What cannot be judged is refused, not reported (issue 24's bad-input table).

Each row: a clear non-zero exit, one error line naming the file, the row and the fix, and no
changed or half-written output. `fair-eval` runs in-process on a hand-made collection; the
stage rows run the real stages on a copy of the tiny profile.

| input | before | now |
|---|---|---|
| a document of the run unknown to the corpus, or with an empty text | exit 0, NFaiRR off | exit 2 |
| a query of the run without qrels, or of the qrels without a ranking | exit 0, MRR off | exit 2 |
| qrels of a query (or all) judging nothing relevant | exit 0, MRR 0 | exit 2 |
| any of these with `--allow-partial` | — | the covered part alone, coverage first |
| `--allow-partial` with nothing covered | NFaiRR 1.0000 | exit 2, no metric |
| a rank that is not a number | accepted | exit 2, the line |
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


def _files(folder: Path, run_rows: list[tuple[str, str]], qrels: str = "q1 0 d0 1\nq2 0 d1 1\n",
           corpus: pl.DataFrame | None = None) -> list[str]:  # fmt: skip
    """`_write` with other qrels (TREC lines) and the run's rows ranked in the given order."""
    argv = _write(folder, _corpus() if corpus is None else corpus, run_rows)
    (folder / "qrels.txt").write_text(qrels)
    return argv


def _cut(rows: list[tuple[str, str]], drop: str) -> list[tuple[str, str]]:
    return [(q, d) for q, d in rows if not (q == drop or d.startswith(drop))]


UNKNOWN = [(q, f"x{d}" if i < 2 else d) for q in ("q1", "q2") for i, d in enumerate(DOCS)]
# case → (run rows, qrels, corpus texts, the gap's words, the complete input of the covered
# part: run rows and qrels that fair-eval evaluates without --allow-partial)
GAPS = {
    "unranked": ([r for r in RUN if r[0] == "q1"], "q1 0 d0 1\nq2 0 d1 1\n", None,
                 r"1 of 2 queries of the qrels have no ranking in the run \(first 'q2'\)",
                 ([r for r in RUN if r[0] == "q1"], "q1 0 d0 1\n")),
    "unjudged": (RUN + [("q3", d) for d in DOCS], "q1 0 d0 1\nq2 0 d1 1\n", None,
                 r"1 of 3 queries of the run have no qrels \(first 'q3'\)",
                 (RUN, "q1 0 d0 1\nq2 0 d1 1\n")),
    "no-relevant": (RUN, "q1 0 d0 1\nq2 0 d1 0\n", None,
                    r"1 of 2 queries of the qrels judge no document relevant \(first 'q2'\)",
                    (_cut(RUN, "q2"), "q1 0 d0 1\n")),
    "unknown-docs": (UNKNOWN, "q1 0 d0 1\nq2 0 d1 1\n", None,
                     r"4 of 12 documents in the run's top 10 are not in the corpus "
                     r"\(first 'xd0'\)", (_cut(UNKNOWN, "x"), "q1 0 d0 1\nq2 0 d1 1\n")),
    "empty-texts": (RUN, "q1 0 d0 1\nq2 0 d1 1\n", ["", *list(DOCS.values())[1:5], ""],
                    r"4 of 12 documents in the run's top 10 have an empty text \(first 'd0'\)",
                    ([r for r in RUN if r[1] not in ("d0", "d5")], "q1 0 d0 1\nq2 0 d1 1\n")),
}  # fmt: skip


def _corpus_of(texts: list[str] | None) -> pl.DataFrame | None:
    return None if texts is None else _corpus(text=texts)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", list(GAPS))
def test_incomplete_input_is_refused_with_what_is_missing_and_how_much(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    rows, qrels, texts, words, _ = GAPS[case]
    argv = _files(tmp_path, rows, qrels, _corpus_of(texts))
    line = _refused(argv, caplog, tmp_path / "out.json")
    assert re.search(rf"run\.trec: incomplete input \(qrels .*qrels\.txt, corpus .*corpus"
                     rf"\.parquet\): {words}; no metric computed\. Fix: .*--allow-partial",
                     line), line  # fmt: skip


@pytest.mark.parametrize("case", list(GAPS))
def test_allow_partial_evaluates_the_covered_part_only_and_prints_the_coverage_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """The values are those of the covered part given as a complete input: nothing of the
    rest (an unknown document, a query without qrels) counts."""
    rows, qrels, texts, _, (covered_rows, covered_qrels) = GAPS[case]
    argv = _files(tmp_path, rows, qrels, _corpus_of(texts))
    assert main([*argv, "--allow-partial"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("coverage: ") and "every metric below is over these" in printed[0]
    partial = json.loads((tmp_path / "out.json").read_text())
    assert 0 < partial.pop("judged_queries", 1) * partial.pop("judged_docs", 1) < 1, partial
    complete = tmp_path / "complete"
    complete.mkdir()
    assert main(_files(complete, covered_rows, covered_qrels, _corpus_of(texts))) == 0
    assert not capsys.readouterr().out.startswith("coverage")  # complete: no coverage line
    expected = json.loads((complete / "out.json").read_text())
    assert {k: v for k, v in partial.items() if k != "run"} == pytest.approx(
        {k: v for k, v in expected.items() if k != "run"}
    )


@pytest.mark.parametrize(
    ("rows", "qrels", "words"),
    [([(q, f"x{d}") for q, d in RUN], "q1 0 d0 1\nq2 0 d1 1\n",
      r"12 of 12 documents in the run's top 10 are not in the corpus"),
     (RUN, "q1 0 d0 0\nq2 0 d1 0\n", r"2 of 2 queries of the qrels judge no document relevant")],
    ids=["no-known-document", "all-zero-qrels"],
)  # fmt: skip
def test_no_metric_is_printed_for_an_empty_covered_part(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str],
    rows: list[tuple[str, str]], qrels: str, words: str,
) -> None:  # fmt: skip
    argv = _files(tmp_path, rows, qrels)
    line = _refused([*argv, "--allow-partial"], caplog, tmp_path / "out.json")
    assert re.search(rf"nothing to evaluate \(coverage: 0 of 2 queries .*\): {words}.*no metric "
                     "is computed over no data", line), line  # fmt: skip
    assert capsys.readouterr().out == ""  # no table, no NFaiRR 1.0000 of nothing


def test_a_rank_that_is_not_a_number_is_refused_with_its_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    argv = _files(tmp_path, RUN)
    run_file = tmp_path / "run.trec"
    lines = run_file.read_text().splitlines()
    lines[3] = lines[3].replace(" 4 ", " four ")
    run_file.write_text("\n".join(lines) + "\n")
    line = _refused(argv, caplog, tmp_path / "out.json")
    assert re.search(r"run\.trec: malformed TREC run: line 4 has a rank that is not a number: "
                     r"'q1 Q0 d3 four 6 t'", line), line  # fmt: skip


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
