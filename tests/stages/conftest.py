"""A throw-away DVC repository with the project's pipeline and the tiny profile."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COPY = ["dvc.yaml", "pipeline", "stages"]


def run(cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIPELINE_LOG="WARNING")
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def make_repo(dest: Path, params: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dest / name)
    shutil.copy(params, dest / "params.yaml")
    run(["git", "init", "-q"], dest)
    run(["git", "config", "user.email", "t@example.org"], dest)
    run(["git", "config", "user.name", "t"], dest)
    run([sys.executable, "-m", "dvc", "init", "-q"], dest)
    run([sys.executable, "-m", "dvc", "config", "core.analytics", "false"], dest)
    run(["git", "add", "-A"], dest)
    run(["git", "commit", "-qm", "init"], dest)
    return dest


@pytest.fixture(scope="session")
def tiny_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny profile, reproduced once and committed (a baseline for experiments)."""
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
