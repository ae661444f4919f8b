"""One line, not a traceback (issue 43): the doctor on an unparseable params.yaml, a stage
stopped by Ctrl-C, and fair-eval's run line with the wrong number of columns. (The resumed
training run's line: tests/unit/test_train_checkpoint.py.)"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline import doctor, io, schemas
from stages.common import INTERRUPTED, run_stage
from tests.stages.conftest import ROOT, run

BROKEN = "dataset:\n  name: [grep-biasir\n"
"""A flow sequence never closed: PyYAML meets the end of the file, line 3, column 1."""


def _broken_repo(tmp_path: Path) -> Path:
    (tmp_path / ".dvc").mkdir()
    (tmp_path / "params.yaml").write_text(BROKEN)
    return tmp_path


def test_doctor_names_an_unparseable_params_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _broken_repo(tmp_path)
    assert doctor.main(["--repo", str(repo)]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    assert out.startswith(f"{repo / 'params.yaml'}: line 3, column 1: not valid YAML (")
    assert out.rstrip().endswith(
        "nothing checked or changed. Fix the file (`git diff params.yaml` shows what changed), "
        "then run the doctor again"
    )


def test_doctor_command_prints_no_traceback(tmp_path: Path) -> None:
    repo = _broken_repo(tmp_path)
    proc = run([sys.executable, "-m", "pipeline.doctor", "--repo", str(repo)], ROOT, check=False)
    assert proc.returncode == 2
    assert proc.stderr == "" and len(proc.stdout.splitlines()) == 1, proc.stdout + proc.stderr


def test_ctrl_c_in_a_stage_is_one_line_exit_130_and_no_half_written_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ctrl-C arrives while the stage's second output is half written: the first stays whole,
    the second is absent (no temporary file left), and the stage says one line."""
    done, cut = tmp_path / "data" / "a.txt", tmp_path / "data" / "corpus.parquet"

    def half_then_ctrl_c(table: Any, where: Any, **kw: Any) -> None:
        Path(where).write_bytes(b"PAR1\x00\x00")  # the first bytes of a Parquet file
        raise KeyboardInterrupt

    def main(argv: Sequence[str] | None) -> None:
        io.write_text("whole\n", done)
        monkeypatch.setattr(io.pq, "write_table", half_then_ctrl_c)
        io.write_table(pl.DataFrame({"doc_id": ["d1"], "text": ["a nurse"]}), cut, schemas.CORPUS)

    code: Any = None
    with caplog.at_level(logging.INFO):
        try:
            run_stage(main)
        except KeyboardInterrupt:  # not re-raised: it would stop the whole test session
            pytest.fail("run_stage let Ctrl-C through as a traceback")
        except SystemExit as e:
            code = e.code
    assert code == 130
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("ERROR", INTERRUPTED)]
    assert re.match(r"interrupted: rerun `dvc repro` to resume \(", INTERRUPTED)
    assert "Traceback" not in capsys.readouterr().err
    assert done.read_text() == "whole\n"
    assert sorted(p.name for p in done.parent.iterdir()) == ["a.txt"]


@pytest.mark.parametrize(
    ("line", "says"),
    [("q1 Q0 d2 2 1.0 run extra", "has 7 fields: 'q1 Q0 d2 2 1.0 run extra' (1 of 2 lines)"),
     ("q1 Q0 d2 2", "has 4 fields (truncated?): 'q1 Q0 d2 2' (1 of 2 lines)")],
    ids=["seven", "four"],
)  # fmt: skip
def test_a_run_line_with_the_wrong_column_count_says_how_many(
    tmp_path: Path, line: str, says: str
) -> None:
    path = tmp_path / "run.trec"
    path.write_text(f"q1 Q0 d1 1 2.0 run\n{line}\n")
    expected = (
        f"{path}: malformed TREC run: line 2 {says}; expected 6 whitespace-separated fields "
        "`qid Q0 docid rank score tag` per line."
    )
    with pytest.raises(io.ArtifactError, match=f"^{re.escape(expected)}$"):
        io.read_trec_run(path)
