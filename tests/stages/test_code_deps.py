"""Generated code deps through DVC itself, on the reproduced tiny profile (issue 34).

Every stage but `params` depends on one code digest (`pipeline.deps.digest`:
``data/code/<stage>.txt``, which the `params` stage writes and which lists the files the stage
runs); the `params` stage depends on all of `pipeline/` and `stages/`. Every module of
`pipeline/` and `stages/` is checked: the stages whose digest (as DVC resolves each stage's
deps: foreach items, `${key}`) lists it. Then real edits: a fixed set of modules (a used and
an unused loss, the params loader, an ordering, a family the profile runs and one it does
not, a source, a stage, the generator itself, which no stage runs) and a seeded random sample
of the others (`CODE_DEPS_SEED` replays one) are each appended a comment, `dvc repro params`
rewrites the digests, and `dvc status` must then name exactly the stages whose digest lists
the file. Editing a metric record's direction makes the report stale. (A new loss and a
method using it rerun only that method's stages and the report:
tests/stages/test_ordering_plugin.py.)
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
SAMPLE = 3
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


def _code(repo: Path) -> dict[str, set[str]]:
    """Each stage's code files: those its digest lists (all of the code for `params`)."""
    out = {}
    for stage, deps in _dvc_deps(repo).items():
        digests = [d for d in deps if d.startswith("data/code/")]
        if stage == "params":
            assert {"pipeline", "stages"} <= deps and not digests
            out[stage] = set(_modules(repo))
            continue
        assert len(digests) == 1, (stage, deps)
        text = (repo / digests[0]).read_text()
        out[stage] = {line.split("  ", 1)[1] for line in text.splitlines()}
    return out


def _holders(code: dict[str, set[str]], path: str) -> set[str]:
    return {s for s, files in code.items() if path in files}


def _params_stage(repo: Path) -> None:
    run([sys.executable, "-m", "dvc", "repro", "-q", "params"], repo)


def _modules(repo: Path) -> list[str]:
    return sorted(
        p.relative_to(repo).as_posix()
        for top in ("pipeline", "stages")
        for p in (repo / top).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def test_every_stage_depends_on_the_digest_of_its_code(repo: Path) -> None:
    params = yaml.safe_load((repo / "params.yaml").read_text())
    code = _code(repo)
    assert {s for s in code if s.startswith("train@")} == {f"train@{m}" for m in params["methods"]}
    stages = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    for stage, files in code.items():  # each lists its own stage module, and files that exist
        cmd = stages[stage.split("@")[0]]
        module = str(cmd.get("do", cmd)["cmd"]).split()[2]  # python -m stages.<x> …
        assert module.replace(".", "/") + ".py" in files, stage
        assert all((repo / f).is_file() for f in files), stage
    assert _holders(code, "pipeline/deps/imports.py") == {"params"}
    # no trained method of the tiny profile uses EqualizeIR: only the `params` stage holds it
    assert _holders(code, "pipeline/train/losses/poe.py") == {"params"}
    margin = _holders(code, "pipeline/train/losses/margin.py")
    assert {s for s in margin if s.startswith("train@")} == {
        "train@baseline",
        "train@curriculum_low_high",
        "train@curriculum_high_low",
    }  # not train@penalty_irrelevant, whose loss is regularised.py
    assert {"report", "evaluate@baseline", "audit"} <= _holders(code, "pipeline/metrics/nfairr.py")


def test_editing_a_module_stales_exactly_the_stages_holding_it(repo: Path) -> None:
    code = _code(repo)
    rest = [m for m in _modules(repo) if m not in FIXED]
    chosen = [*FIXED, *random.Random(SEED).sample(rest, SAMPLE)]
    for module in chosen:
        path = repo / module
        original = path.read_bytes()
        try:
            path.write_bytes(original + b"\n# an edit\n")
            _params_stage(repo)  # rewrites the digests (this module's stages' change)
            stale = _status(repo)
        finally:
            path.write_bytes(original)
        expected = _holders(code, module) - {"params"}
        assert stale == expected, (module, f"CODE_DEPS_SEED={SEED}")
    _params_stage(repo)
    assert _status(repo) == set()


def test_a_metric_direction_edit_stales_the_report(repo: Path) -> None:
    path = repo / "pipeline/metrics/nfairr.py"
    original = path.read_text()
    assert original.count('"↑"') >= 1
    try:
        path.write_text(original.replace('"↑"', '"↓"', 1))
        assert _status(repo) == {"params"}  # the code, before its digests are rewritten
        _params_stage(repo)
        stale = _status(repo)
    finally:
        path.write_text(original)
        _params_stage(repo)
    assert "report" in stale and "evaluate@baseline" in stale and "train@baseline" not in stale
