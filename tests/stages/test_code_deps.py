"""Generated code deps through DVC itself, on the reproduced tiny profile (issue 34).

Every module of `pipeline/` and `stages/` is checked: the stages whose deps DVC resolves from
dvc.yaml (foreach items, their slots, `${model.arch}`) hold it exactly when the generated
deps do (`python -m pipeline.deps --show`), for every stage. Then real edits: a fixed set of
modules (a used and an unused loss, the params loader, an ordering, a family the profile
runs and one it does not, a source, a stage, the generator itself, which no stage runs) and
a seeded random sample of the others (`CODE_DEPS_SEED` replays one) are each appended a
comment, and `dvc status` must name exactly the stages whose deps hold the file (1-3 s a
status: all ~130 modules would take minutes). Editing a metric record's direction makes the
report stale. (A new loss and a method using it rerun only that method's stages and the
report: tests/stages/test_ordering_plugin.py.)
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml

from pipeline.deps.plan import resolved_deps
from tests.stages.conftest import run

pytestmark = pytest.mark.slow

FIXED = (
    "pipeline/train/losses/margin.py",  # the loss of two of the tiny profile's methods
    "pipeline/train/losses/poe.py",  # a loss no method of the tiny profile uses
    "pipeline/params.py",
    "pipeline/ordering/curriculum.py",
    "pipeline/models/bi_encoder.py",
    "pipeline/models/cross_encoder.py",  # a family the profile does not run
    "pipeline/data/grep_biasir.py",
    "stages/train.py",
    "pipeline/deps/imports.py",  # no stage runs the generator
)
SAMPLE = 6
SEED = int(os.environ.get("CODE_DEPS_SEED", time.time_ns() % 10_000))


@pytest.fixture(scope="module")
def repo(tiny_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean copy of the reproduced tiny profile: `dvc status` says nothing changed."""
    copy = tmp_path_factory.mktemp("deps") / "repo"
    shutil.copytree(tiny_repo, copy, symlinks=True)
    run(["git", "reset", "-q", "--hard", "HEAD"], copy)  # earlier tests ran experiments in it
    run([sys.executable, "-m", "dvc", "checkout", "-f", "-q"], copy)
    assert _status(copy) == set()
    return copy


def _status(repo: Path) -> set[str]:
    from dvc.repo import Repo

    with contextlib.chdir(repo), Repo(".") as dvc:  # stage names without a path
        return set(dvc.status())


def _dvc_deps(repo: Path) -> dict[str, set[str]]:
    """Each stage's file and folder deps as DVC resolves them (not its params.yaml)."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    with contextlib.chdir(repo), Repo(".") as dvc:
        return {
            s.addressing: {
                Path(d.def_path).as_posix() for d in s.deps if not isinstance(d, ParamsDependency)
            }
            for s in dvc.index.stages
        }


def _holders(deps: dict[str, set[str]], path: str) -> set[str]:
    return {s for s, ds in deps.items() if any(path == d or path.startswith(f"{d}/") for d in ds)}


def _modules(repo: Path) -> list[str]:
    return sorted(
        p.relative_to(repo).as_posix()
        for top in ("pipeline", "stages")
        for p in (repo / top).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def test_dvc_resolves_the_generated_deps_of_every_stage(repo: Path) -> None:
    text = (repo / "dvc.yaml").read_text()
    params = yaml.safe_load((repo / "params.yaml").read_text())
    dvc = _dvc_deps(repo)
    generated = {s: set(resolved_deps(text, s, params)) for s in dvc}
    assert dvc == generated
    assert {s for s in dvc if s.startswith("train@")} == {f"train@{m}" for m in params["methods"]}
    for module in _modules(repo):  # every module: the same holders
        assert _holders(dvc, module) == _holders(generated, module), module


def test_editing_a_module_stales_exactly_the_stages_holding_it(repo: Path) -> None:
    from dvc.repo import Repo

    deps = _dvc_deps(repo)
    rest = [m for m in _modules(repo) if m not in FIXED]
    chosen = [*FIXED, *random.Random(SEED).sample(rest, SAMPLE)]
    with contextlib.chdir(repo), Repo(".") as dvc:  # one Repo: each status hashes afresh
        for module in chosen:
            path = repo / module
            original = path.read_bytes()
            try:
                path.write_bytes(original + b"\n# an edit\n")
                stale = set(dvc.status())
            finally:
                path.write_bytes(original)
            assert stale == _holders(deps, module), (module, f"CODE_DEPS_SEED={SEED}")
        assert dvc.status() == {}
    assert not _holders(deps, "pipeline/deps/imports.py")
    # no trained method of the tiny profile uses EqualizeIR: only the `params` stage, which
    # validates every plug-in's settings against its record, holds its file
    assert _holders(deps, "pipeline/train/losses/poe.py") == {"params"}
    margin = _holders(deps, "pipeline/train/losses/margin.py")
    assert {s for s in margin if s.startswith("train@")} == {
        "train@baseline",
        "train@curriculum_low_high",
        "train@curriculum_high_low",
    }  # not train@penalty_irrelevant, whose loss is regularised.py


def test_a_metric_direction_edit_stales_the_report(repo: Path) -> None:
    path = repo / "pipeline/metrics/nfairr.py"
    original = path.read_text()
    assert original.count('"↑"') >= 1
    try:
        path.write_text(original.replace('"↑"', '"↓"', 1))
        stale = _status(repo)
    finally:
        path.write_text(original)
    assert "report" in stale and "evaluate@baseline" in stale and "train@baseline" not in stale
