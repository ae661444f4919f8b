"""Fixtures shared across test folders: the tiny DVC profile, reproduced once per session; a
miniature ir_datasets cache in the real formats; a network block."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.stages.conftest import ROOT, make_repo, run

if TYPE_CHECKING:
    from tests.irds_miniature import Msmarco, TrecFair

OFFLINE = Path(__file__).resolve().parent / "offline"  # holds the blocking sitecustomize.py
HOME_KEY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Every test process reads ir_datasets from a fresh folder, never the user's cache.

    ir_datasets fixes its paths when it is imported, so this runs before any test module
    (or the miniature fixture below) imports it; subprocesses inherit the variable."""
    home = tempfile.mkdtemp(prefix="irds-home-")
    os.environ["IR_DATASETS_HOME"] = home
    config.stash[HOME_KEY] = home


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(HOME_KEY, None)
    if home:
        shutil.rmtree(home, ignore_errors=True)


@dataclass(frozen=True)
class Miniature:
    """The session's ir_datasets cache (`IR_DATASETS_HOME`) and what was planted in it."""

    home: Path
    msmarco: Msmarco
    trec_fair: TrecFair


@pytest.fixture(scope="session")
def miniature() -> Miniature:
    """Miniature msmarco-passage and trec-fair/2022 files at their ir_datasets cache paths
    (`tests/irds_miniature.py`), read by the real `ir_datasets.load`."""
    from tests.irds_miniature import write_msmarco, write_trec_fair

    home = Path(os.environ["IR_DATASETS_HOME"])
    mini = Miniature(home, write_msmarco(home), write_trec_fair(home))
    import ir_datasets

    corpus = ir_datasets.load("trec-fair/2022").docs_handler()._dlc.path(force=False)
    assert str(corpus).startswith(str(home)), (
        f"ir_datasets reads {corpus}, not under {home}: it was imported before "
        "tests/conftest.py set IR_DATASETS_HOME"
    )
    return mini


@dataclass
class NoNetwork:
    """What tried to reach the network: in this process (`attempts`) and in subprocesses
    started with `env` (`logged()`, from the file `NO_NETWORK_LOG` names)."""

    attempts: list[str]
    log: Path

    @property
    def env(self) -> dict[str, str]:
        """Variables for a subprocess: the blocking `sitecustomize` first on its path."""
        path = os.pathsep.join(p for p in (str(OFFLINE), os.environ.get("PYTHONPATH")) if p)
        return {"PYTHONPATH": path, "NO_NETWORK_LOG": str(self.log)}

    def logged(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture()
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[NoNetwork]:
    """No host can be resolved or connected to in this process, nor in subprocesses that
    use `.env`; the test fails if anything tried (a test expecting an attempt clears the
    record after checking it)."""
    spec = importlib.util.spec_from_file_location("_no_network", OFFLINE / "sitecustomize.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    state = NoNetwork([], tmp_path / "network-attempts.log")
    module.install(state.attempts.append, monkeypatch.setattr)
    yield state
    tried = state.attempts + state.logged()
    assert not tried, f"the test tried to reach the network: {tried}"


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
