"""Fixtures shared across test folders: the tiny DVC profile, reproduced once per session."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.stages.conftest import ROOT, make_repo, run


@pytest.fixture(scope="session")
def tiny_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny profile, reproduced once and committed (a baseline for experiments).

    Tests may change its workspace (`dvc exp run`); what HEAD and the DVC cache hold is fixed.
    Copy it (`shutil.copytree`) before breaking anything.
    """
    repo = make_repo(tmp_path_factory.mktemp("tiny"), ROOT / "tests" / "data" / "params_tiny.yaml")
    run([sys.executable, "-m", "dvc", "repro", "-q"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "repro"], repo)
    return repo


@pytest.fixture()
def dvc() -> Callable[..., subprocess.CompletedProcess[str]]:
    def call(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run([sys.executable, "-m", "dvc", *args], repo, check=check)

    return call
