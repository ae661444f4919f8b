"""`scripts/setup.sh` on a fresh machine: a `.venv` that is not this checkout's environment
(a symbolic link, dangling or not, or a folder whose Python does not run) is refused with one
line saying what to do, before anything is installed or created."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _setup(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run the copy of setup.sh in ``tmp_path``; ``PYTHON`` names no interpreter, so a run
    that got as far as creating an environment would fail with another message."""
    env = {**os.environ, "PYTHON": str(tmp_path / "no-python-here")}
    return subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    """A folder holding only scripts/setup.sh."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    return tmp_path


@pytest.mark.parametrize(
    "target",
    ["/nonexistent/other-machine/.venv", "__real__"],
    ids=["dangling", "into-another-environment"],
)
def test_a_venv_link_is_refused_before_anything_is_installed(checkout: Path, target: str) -> None:
    tmp_path = checkout
    real = Path(sys.executable).parents[1]  # a working environment: still not ours to change
    (tmp_path / ".venv").symlink_to(real if target == "__real__" else target)
    before = _tree(tmp_path)
    proc = _setup(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stdout == "", proc.stdout + proc.stderr
    assert lines[0].startswith("Error: .venv is a symbolic link") and "rm .venv" in lines[0]
    assert _tree(tmp_path) == before  # nothing created, nothing deleted
    assert (tmp_path / ".venv").is_symlink()  # left as it was


def test_a_venv_folder_whose_python_does_not_run_is_refused(checkout: Path) -> None:
    tmp_path = checkout
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to("/nonexistent/python3.11")
    proc = _setup(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "does not run" in lines[0] and "rm -rf .venv" in lines[0], lines
    assert _tree(tmp_path / ".venv") == ["bin", "bin/python"]  # nothing created or deleted
