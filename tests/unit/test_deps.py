"""`python -m pipeline.deps`: the committed dvc.yaml is what the code generates (`--check`), the
import graph reads what Python runs, and each stage's deps hold exactly its plug-ins' files.
(DVC itself on those deps: tests/stages/test_code_deps.py.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.deps import VARS, digest, unstaged_methods
from pipeline.deps import plan as deps
from pipeline.deps.imports import scan
from pipeline.deps.records import record_modules
from pipeline.errors import InputError
from pipeline.params import load_params

ROOT = Path(__file__).resolve().parents[2]


def test_check_passes_on_the_committed_dvc_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert deps.main(["--check"]) == 0


def test_check_fails_with_a_diff_when_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    for name in ("pipeline", "stages"):  # the same code, read through links
        (tmp_path / name).symlink_to(ROOT / name)
    text = (ROOT / "dvc.yaml").read_text()
    (tmp_path / "dvc.yaml").write_text(text.replace("      - data/code/score.txt\n", "", 1))
    monkeypatch.chdir(tmp_path)
    assert deps.main(["--check"]) == 1
    assert "+      - data/code/score.txt" in capsys.readouterr().out
    assert deps.main(["--write"]) == 0 and (tmp_path / "dvc.yaml").read_text() == text


def test_a_rewrite_changes_only_deps_and_vars() -> None:
    """Every line of dvc.yaml that is not a deps item, a `foreach:` or in `vars:` is kept,
    comments included: regenerating from a dvc.yaml whose deps are hand-written folders
    gives the committed file, and the other lines of both are the same in the same order."""
    text = (ROOT / "dvc.yaml").read_text()
    old = [line for line in text.splitlines() if line.startswith("  ") or not line.strip()]
    hand = text.replace("      - data/code/extract.txt\n", "      - pipeline/data\n", 1)
    assert deps.render(hand, ROOT, load_params(ROOT / "params.yaml")) == text

    def others(lines: list[str]) -> list[str]:
        body = lines[lines.index("stages:") :]
        return [ln for ln in body if not ln.lstrip().startswith(("- ", "foreach:"))]

    assert others(text.splitlines()) == others(hand.splitlines())
    assert any("# The held-out transfer collection" in line for line in old)


@pytest.fixture(scope="module")
def planner() -> deps.Planner:
    return deps.Planner(ROOT, load_params(ROOT / "params.yaml"))


def _file(module: str) -> str:
    return module.replace(".", "/") + ".py"


def test_each_train_stage_holds_its_own_plugins_only(planner: deps.Planner) -> None:
    params = planner.params
    loss_files = {n: _file(m) for n, m in record_modules("losses").items()}
    orderings = {_file(m) for m in record_modules("orderings").values()}
    plan = planner.stage("stages.train", list(params.methods))
    shared = set(plan.shared)
    assert not shared & (set(loss_files.values()) | orderings)
    assert deps.FAMILY in plan.shared  # the family of the run's model.arch, via DVC's params
    for method, own in plan.per_method.items():
        m = params.methods[method]
        assert set(own) & orderings == {f"pipeline/ordering/{m.ordering}.py"}, method
        assert {loss_files[n] for n in m.loss} <= set(own), (method, own)
    equalizeir = set(plan.per_method["equalizeir"])  # poe + its weak learner's margin
    assert {"pipeline/train/losses/poe.py", "pipeline/train/losses/margin.py",
            "pipeline/train/weak.py"} <= equalizeir  # fmt: skip
    baseline = set(plan.per_method["baseline"])
    assert baseline & set(loss_files.values()) == {"pipeline/train/losses/margin.py"}


def test_report_and_evaluate_hold_every_metric_record(planner: deps.Planner) -> None:
    metrics = {_file(m) for m in record_modules("metrics").values()}
    for module in ("stages.report", "stages.evaluate", "stages.audit"):
        assert metrics <= set(planner.stage(module, None).shared), module
    extract = set(planner.stage("stages.extract", None).shared)
    sources = {n: _file(m) for n, m in record_modules("sources").items()}
    used = load_params(ROOT / "params.yaml").dataset.name  # its source alone: editing the
    assert sources.pop(used) in extract  # held-out source's reader reruns transfer_data only
    assert not set(sources.values()) & extract and not metrics & extract


def test_every_stage_depends_on_a_digest_the_params_stage_writes() -> None:
    """Each stage's code dep is one digest of `pipeline.deps.digest` (per method for `order`
    and `train`), and the digests list exactly the files the planner gives the stage."""
    params = load_params(ROOT / "params.yaml")
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    table = doc["vars"][0][VARS]
    assert list(table) == list(params.methods)
    assert all(list(fields) == ["ordering"] for fields in table.values())
    written = digest.digests(ROOT, params)
    for name, stage in doc["stages"].items():
        deps_ = stage.get("do", stage).get("deps", [])
        code = [d for d in deps_ if d.startswith(("pipeline/", "stages/", "data/code/"))
                and not d.startswith("pipeline/resources")] or deps_[:2]  # fmt: skip
        if name == "params":
            assert code == ["pipeline", "stages"]
            continue
        (dep,) = code
        keys = list(params.methods) if "${key}" in dep else [""]
        for key in keys:
            digest_name = dep.replace("${key}", key).removeprefix("data/code/").removesuffix(".txt")
            assert digest_name in written, (name, dep)
    planner = deps.Planner(ROOT, params)
    plan = planner.stage("stages.train", ["baseline"])
    listed = {line.split("  ", 1)[1] for line in written["train@baseline"].splitlines()}
    family = f"pipeline/models/{params.model.arch}.py"
    files = {family if f == deps.FAMILY else f for f in plan.shared + plan.per_method["baseline"]}
    folders = {f for f in files if (ROOT / f).is_dir()}  # a resource folder: its files
    inside = {p.relative_to(ROOT).as_posix() for f in folders for p in (ROOT / f).rglob("*")
              if p.is_file() and "__pycache__" not in p.parts}  # fmt: skip
    assert folders and listed == (files - folders) | inside
    assert "pipeline/train/losses/poe.py" not in listed  # another method's loss


def test_unstaged_methods_names_a_method_without_stages(tmp_path: Path) -> None:
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    assert unstaged_methods(["baseline", "lws"], tmp_path / "dvc.yaml") == []
    assert unstaged_methods(["baseline", "new_one"], tmp_path / "dvc.yaml") == ["new_one"]


PROJECT = {
    "pipeline/__init__.py": "",
    "pipeline/a.py": (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from pathlib import Path\n"
        "from . import b\n"
        "from .sub import c as _c\n"
        "if TYPE_CHECKING:\n"
        "    from pipeline import typing_only\n"
        "else:\n"
        "    import pipeline.runtime_only\n"
        "DATA = Path(__file__).resolve().parent / 'resources' / 'lists'\n"
        "MORE = {'x': DATA / 'one.txt', 'y': Path(__file__).parents[1] / 'README'}\n"
        "def lazy() -> None:\n"
        "    from pipeline.sub.deep import f\n"
        "    import importlib\n"
        "    importlib.import_module('pipeline.named')\n"
    ),
    "pipeline/b.py": "import os\n",
    "pipeline/typing_only.py": "",
    "pipeline/runtime_only.py": "",
    "pipeline/named.py": "",
    "pipeline/sub/__init__.py": "from ..b import *\n",
    "pipeline/sub/c.py": "",
    "pipeline/sub/deep.py": "def f() -> None: ...\n",
    "pipeline/resources/lists/one.txt": "x\n",
    "stages/__init__.py": "",
    "stages/s.py": "from pipeline.a import lazy\n",
}


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_import_graph_reads_what_python_runs(tmp_path: Path) -> None:
    graph = scan(_project(tmp_path, PROJECT))
    assert graph.edges["pipeline.a"] == {
        "pipeline", "pipeline.b", "pipeline.sub", "pipeline.sub.c", "pipeline.runtime_only",
        "pipeline.sub.deep", "pipeline.named",
    }  # fmt: skip
    assert graph.edges["pipeline.sub"] == {"pipeline", "pipeline.b"}
    assert graph.closure({"stages.s"}) == {
        "stages", "stages.s", "pipeline", "pipeline.a", "pipeline.b", "pipeline.sub",
        "pipeline.sub.c", "pipeline.runtime_only", "pipeline.sub.deep", "pipeline.named",
    }  # fmt: skip
    assert {p.as_posix() for p in graph.resources["pipeline.a"]} == {
        "pipeline/resources/lists",
        "pipeline/resources/lists/one.txt",
    }


def test_a_computed_import_is_an_error_naming_the_line(tmp_path: Path) -> None:
    dynamic = "import importlib\nname = 'x'\nimportlib.import_module(name)\n"
    files = {**PROJECT, "pipeline/b.py": dynamic}
    with pytest.raises(InputError, match=r"pipeline/b.py:3: a dynamic import of a computed name"):
        scan(_project(tmp_path, files))


@pytest.mark.slow
def test_the_graph_holds_what_importing_a_stage_loads() -> None:
    """Importing ``stages.train`` in a fresh interpreter loads only modules of its closure or
    of a registry's records (the registries load all of theirs; the stage runs only its
    method's): the static reading misses no module-level import."""
    graph = scan(ROOT)
    code = "import sys, stages.train; print('\\n'.join(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=True)  # fmt: skip
    loaded = {m for m in proc.stdout.split() if m in graph.files}
    records = {m for kind in ("sources", "orderings", "losses", "metrics", "models")
               for m in record_modules(kind).values()}  # fmt: skip
    allowed = graph.closure({"stages.train"}) | graph.closure(records)
    assert loaded - allowed == set()
    assert "pipeline.train.loop" in loaded and "pipeline.train.losses.margin" in loaded


def test_the_report_names_a_method_without_stages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A method added to params.yaml without `--write` has no stages: the report stops with
    the method and the command, not with a missing file."""
    from stages import report

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["methods"]["brand_new"] = dict(params["methods"]["baseline"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"methods \['brand_new'\] of params.yaml have no stages"):
        report.main([])
