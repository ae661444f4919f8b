"""The plug-in conformance check (pipeline/conformance.py, issue 44) over every registered
record of every kind and over docs/adding-a-method.md's four templates: each pickles (a model
family's model survives DDP's torch.save), its settings round-trip through params.yaml and
`dvc exp run -S`, a typo is refused with the key and a "did you mean", and the pipeline
lists it (code deps, report columns, per-term sweep keys). No test names a record."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline import plugins
from pipeline.conformance import (
    KINDS,
    ConformanceError,
    check_model,
    check_pickles,
    check_record,
    every_record,
)
from pipeline.report import docs

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "adding-a-method.md"


def _base() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    return raw


def test_every_plugin_kind_has_a_check() -> None:
    assert set(KINDS) == set(plugins.PACKAGES)
    assert {kind for kind, _ in every_record()} == set(plugins.PACKAGES)


@pytest.mark.parametrize(("kind", "name"), every_record())
def test_every_registered_record_conforms(kind: str, name: str) -> None:
    check_record(kind, name, _base())


@pytest.mark.parametrize("arch", sorted(plugins.records("model family")))
def test_every_family_model_survives_ddps_save(arch: str) -> None:
    """The built model of every family through ``torch.save``/``torch.load``, as the DDP
    launcher hands it to its ranks (pipeline/train/distributed.py)."""
    from tests.unit.tiny_rankers import tiny_ranker

    check_model(arch, tiny_ranker(arch))


def _local_term() -> Any:
    def fn(s_pos: Any, s_neg: Any, batch: Any, cfg: Any) -> Any:
        return s_pos

    return fn


def test_a_record_that_does_not_pickle_is_named() -> None:
    """A term whose function is made inside a function (not named at module level) fails
    the check with the fix, as the guide's model family did."""
    import dataclasses

    kind = "loss"
    name, record = next((n, r) for n, r in plugins.records(kind).items() if r.fn is not None)
    broken = dataclasses.replace(record, fn=_local_term())
    with pytest.raises(ConformanceError, match=rf"{kind} {name!r} fails 'pickles'.*module level"):
        check_pickles(kind, name, broken)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> None:
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v


PACKAGE_KIND = {"pipeline/train/losses/": "loss", "pipeline/metrics/": "metric",
                "pipeline/models/": "model family", "pipeline/data/": "source",
                "pipeline/ordering/": "ordering", "pipeline/post/": "post"}  # fmt: skip
CHECK = textwrap.dedent("""
    import sys, yaml
    from pathlib import Path
    from pipeline import plugins
    from pipeline.conformance import check_model, check_record
    base = yaml.safe_load(Path(sys.argv[1]).read_text())
    for kind, module in zip(sys.argv[2::2], sys.argv[3::2]):
        records = plugins.records(kind)
        (name,) = [n for n, r in records.items() if module in (
            getattr(r, "fn", None).__module__ if getattr(r, "fn", None) else "",
            getattr(r, "ranker", None).__module__ if getattr(r, "ranker", None) else "",
            getattr(r, "config", type).__module__)]
        check_record(kind, name, base)
        if kind == "model family":  # DDP: the launcher saves the model, a fresh process loads it
            import subprocess, torch
            from tests.unit.tiny_rankers import tiny_ranker
            model = tiny_ranker(name)
            check_model(name, model)
            torch.save(model, Path(sys.argv[1]).parent / "model.pt")
            subprocess.run([sys.executable, "-P", "-c", "import sys, torch; "
                            "print(type(torch.load(sys.argv[1], weights_only=False)).__name__)",
                            str(Path(sys.argv[1]).parent / "model.pt")], check=True)
        print("conforms:", kind, name)
""")


@pytest.mark.slow
def test_the_guides_templates_conform(tmp_path: Path) -> None:
    """The guide's plug-in files, written into a copy of the `pipeline` package as a
    contributor would, are registered by their packages and pass the same check (a model
    family defined as the guide shows survives DDP's save), with the guide's params."""
    files = {str(b.name): b.text for b in docs.parse(GUIDE) if b.kind == "file"}
    assert len(files) == 4
    shutil.copytree(ROOT / "pipeline", tmp_path / "pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    args = []
    for path, text in files.items():
        (tmp_path / path).write_text(text, encoding="utf-8")
        kind = next(k for prefix, k in PACKAGE_KIND.items() if path.startswith(prefix))
        args += [kind, path.removesuffix(".py").replace("/", ".")]
    params = _base()
    for block in docs.parse(GUIDE):
        if block.kind == "tested-by" and block.lang == "yaml":
            _merge(params, yaml.safe_load(block.text))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    out = subprocess.run([sys.executable, "-P", "-c", CHECK, str(tmp_path / "params.yaml"),
                          *args], cwd=ROOT, env=env, capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("conforms:") == 4, out.stdout
