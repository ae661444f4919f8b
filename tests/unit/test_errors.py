"""Stages end the project's own errors with one line; bugs and library errors keep their
traceback (pipeline/errors.py, stages/common.run_stage)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl
import pytest
import torch

from pipeline.errors import is_expected
from pipeline.params import ParamsError, load_params
from pipeline.train.losses import get_loss
from pipeline.train.losses.margin import MarginConfig
from stages.common import run_stage


def _caught(fn: Callable[[], object]) -> BaseException:
    try:
        fn()
    except Exception as e:
        return e
    raise AssertionError("no error raised")


def test_a_check_of_ours_is_expected(tmp_path: Path) -> None:
    error = _caught(lambda: load_params(tmp_path / "nope.yaml"))
    assert isinstance(error, ParamsError) and is_expected(error)


def test_a_library_error_inside_our_code_is_not() -> None:
    # torch's RuntimeError (shape mismatch) raised inside the margin loss: a bug, not a check
    margin = get_loss("margin")
    error = _caught(lambda: margin(torch.zeros(2), torch.zeros(3), {}, MarginConfig()))
    assert isinstance(error, RuntimeError) and not is_expected(error)


def test_a_value_error_outside_our_code_is_not() -> None:
    error = _caught(lambda: int("x"))
    assert isinstance(error, ValueError) and not is_expected(error)


def test_a_missing_input_file_is_expected(tmp_path: Path) -> None:
    error = _caught(lambda: pl.read_parquet(tmp_path / "missing.parquet"))
    assert isinstance(error, FileNotFoundError) and is_expected(error)


def test_run_stage_exits_1_with_one_line_on_our_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def main(argv: Sequence[str] | None) -> None:
        load_params(tmp_path / "nope.yaml")

    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as stop:
        run_stage(main)
    assert stop.value.code == 1
    assert [r.getMessage() for r in caplog.records] == [
        f"{tmp_path / 'nope.yaml'}: params file not found; run from the repository root"
    ]


def test_run_stage_lets_a_bug_keep_its_traceback() -> None:
    def main(argv: Sequence[str] | None) -> None:
        get_loss("margin")(torch.zeros(2), torch.zeros(3), {}, MarginConfig())

    with pytest.raises(RuntimeError, match="size of tensor"):
        run_stage(main)


def test_every_error_of_ours_derives_from_the_project_base() -> None:
    """Errors are recognised by type (pipeline.errors), not by where they were raised."""
    from pipeline.errors import InputError, PipelineError, SetupError
    from pipeline.io import ArtifactError
    from pipeline.schemas import SchemaError

    for cls in (ParamsError, ArtifactError, SchemaError, InputError, SetupError):
        assert issubclass(cls, PipelineError)
    assert is_expected(InputError("x")) and not is_expected(ValueError("x"))
