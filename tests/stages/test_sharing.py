"""Sharing results through a DVC remote (README, "Share results"): `dvc push` from one clone,
`dvc pull` in a fresh clone restores every output with nothing to rerun, and `dvc import`
takes a run from another clone. A local directory stands in for S3 or SSH."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.stages.conftest import ROOT, run

pytestmark = pytest.mark.slow
Dvc = Callable[..., subprocess.CompletedProcess[str]]


def _cache_type() -> str:
    config = configparser.ConfigParser()
    config.read(ROOT / ".dvc" / "config")
    return config["cache"]["type"]


@pytest.fixture(scope="module")
def pushed(tiny_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the reproduced tiny profile at its HEAD, with the project's cache link type
    and a local-directory default remote committed, pushed; (source clone, remote)."""
    base = tmp_path_factory.mktemp("share")
    src, remote = base / "alice", base / "remote"
    shutil.copytree(tiny_repo, src, symlinks=True)
    run(["git", "reset", "-q", "--hard"], src)  # other tests ran experiments in the workspace
    dvc = [sys.executable, "-m", "dvc"]
    run([*dvc, "checkout", "-q", "--force"], src)
    run([*dvc, "config", "cache.type", _cache_type()], src)
    run([*dvc, "remote", "add", "-d", "shared", str(remote)], src)
    run(["git", "commit", "-qam", "share through a local remote"], src)
    run([*dvc, "push", "-q"], src)
    return src, remote


def test_pull_in_a_fresh_clone_restores_every_output_and_reruns_nothing(
    pushed: tuple[Path, Path], tmp_path: Path, dvc: Dvc
) -> None:
    src, _ = pushed
    clone = tmp_path / "bob"
    run(["git", "clone", "-q", str(src), str(clone)], tmp_path)
    assert not list((clone / "models").rglob("*.safetensors*"))  # git has only .gitignore
    assert not (clone / "data" / "corpus.parquet").exists()
    dvc(clone, "pull", "-q")
    outs = [p.relative_to(src) for p in src.rglob("*") if p.is_file() and _is_output(src, p)]
    assert any(p.parts[0] == "models" for p in outs) and any(p.parts[0] == "runs" for p in outs)
    for rel in outs:  # every cached output, byte for byte
        assert (clone / rel).read_bytes() == (src / rel).read_bytes(), rel
    status = dvc(clone, "status")
    assert "Data and pipelines are up to date" in status.stdout, status.stdout
    repro = dvc(clone, "repro")
    assert not re.findall(r"Running stage '([^']+)'", repro.stdout), repro.stdout
    frozen = next((clone / "models" / "baseline").rglob("model-00001-of-00002.safetensors"))
    assert frozen.stat().st_nlink > 2  # one cache file, hard-linked by every fold model


def test_import_a_run_from_another_clone(pushed: tuple[Path, Path], tmp_path: Path) -> None:
    """`dvc import` reads the source's default remote (a clone without it, and without the
    data, has nothing to give: DVC fails with 'No storage files available')."""
    src, _ = pushed
    source_clone, other = tmp_path / "bob", tmp_path / "carol"
    run(["git", "clone", "-q", str(src), str(source_clone)], tmp_path)
    other.mkdir()
    run(["git", "init", "-q"], other)
    dvc = [sys.executable, "-m", "dvc"]
    run([*dvc, "init", "-q"], other)
    run([*dvc, "import", str(source_clone), "runs/baseline", "-o", "alice-baseline"], other)
    got = other / "alice-baseline" / "run.trec"
    assert got.read_bytes() == (src / "runs" / "baseline" / "run.trec").read_bytes()
    assert (other / "alice-baseline.dvc").is_file()
    update = run([*dvc, "update", "alice-baseline.dvc"], other)
    assert update.returncode == 0


def _is_output(repo: Path, path: Path) -> bool:
    """Whether ``path`` is a DVC-cached output (git-ignored, outside .dvc and .git)."""
    rel = path.relative_to(repo)
    if rel.parts[0] in (".dvc", ".git") or "__pycache__" in rel.parts:
        return False
    proc = subprocess.run(["git", "check-ignore", "-q", str(rel)], cwd=repo, check=False)
    return proc.returncode == 0
