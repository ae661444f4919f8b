"""A throw-away DVC repository with the project's pipeline and the tiny profile.

The fixtures built on it (`tiny_repo`, `dvc`) live in `tests/conftest.py`, so the robustness
tests share the one session-wide reproduction with the stage tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COPY = ["dvc.yaml", "pipeline", "stages"]


def run(
    cmd: list[str], cwd: Path, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`cmd` in `cwd` with the venv first on PATH, offline Hugging Face, `env` added."""
    env = {**os.environ, **(env or {})}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIPELINE_LOG="WARNING")
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


WHOLE = ("methods", "controls", "post")  # sections a profile replaces whole


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        both = isinstance(v, dict) and isinstance(base.get(k), dict) and k not in WHOLE
        out[k] = _merge(base[k], v) if both else v
    return out


def tiny_params(overrides: Path) -> str:
    """The repository's params.yaml with the profile's overrides (methods replaced whole;
    the default's `controls:` name its methods, so a profile with its own methods has none
    unless it sets its own)."""
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    over = yaml.safe_load(overrides.read_text())
    if "methods" in over:
        over.setdefault("controls", {})
    return yaml.safe_dump(_merge(base, over), sort_keys=False)


def write_deps(repo: Path) -> None:
    """Generate `repo`'s dvc.yaml code deps for its params.yaml and code (its per-method stages
    are the methods of its params): `python -m pipeline.deps --write` with its own pipeline."""
    run([sys.executable, "-m", "pipeline.deps", "--write"], repo)


def make_repo(dest: Path, params: Path) -> Path:
    """A git+DVC repository with the project's pipeline and `params` merged over params.yaml
    (dvc.yaml's code deps generated for them)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dest / name)
    (dest / "params.yaml").write_text(tiny_params(params))
    write_deps(dest)
    run(["git", "init", "-q"], dest)
    run(["git", "config", "user.email", "t@example.org"], dest)
    run(["git", "config", "user.name", "t"], dest)
    run([sys.executable, "-m", "dvc", "init", "-q"], dest)
    # the project's: build products (bytecode, numba's cache) stay out of code folders' hashes
    shutil.copy(ROOT / ".dvcignore", dest / ".dvcignore")
    run([sys.executable, "-m", "dvc", "config", "core.analytics", "false"], dest)
    shutil.copytree(ROOT / ".dvc" / "plots", dest / ".dvc" / "plots", dirs_exist_ok=True)
    run(["git", "add", "-A"], dest)
    run(["git", "commit", "-qm", "init"], dest)
    return dest
