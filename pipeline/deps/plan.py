"""The code deps of every stage of dvc.yaml and the rewrite of its deps lists (see
`pipeline.deps`)."""

from __future__ import annotations

import argparse
import difflib
import logging
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline import paths
from pipeline.deps import EVAL_VARS, POST_VARS, VARS, dvcyaml, slices
from pipeline.deps.imports import RESOURCES, Graph, scan
from pipeline.deps.records import REGISTRIES, record_modules, referenced_losses
from pipeline.errors import InputError
from pipeline.params import Params, load_params

log = logging.getLogger(__name__)

FAMILY = "pipeline/models/${model.arch}.py"
"""The model family's file, resolved by DVC from the run's params."""
USES: dict[str, tuple[str, ...]] = {
    "stages.extract": ("source",),  # dataset.name's: -S switches it with the digests
    "stages.score": (),
    "stages.candidates": (),
    "stages.transfer_data": ("transfer",),  # runs the held-out source's extract
    "stages.features": ("model",),
    "stages.order": ("ordering",),
    "stages.train": ("loss", "ordering", "model", "source"),  # the model card names the
    "stages.rerank": ("model", "source"),  # ordering's and source's settings
    "stages.evaluate": ("metrics", "source"),  # the source's `submissions`
    "stages.audit": ("metrics",),
    "stages.curriculum_figure": (),
    "stages.report": ("metrics", "source"),  # the source's `saturated` text
    "stages.post": ("posts",),
}
"""The plug-in records each stage module runs: all ``sources`` / ``metrics``, the ``source``
of ``dataset.name``, the held-out ``transfer`` source of ``transfer.name``, the ``model``
family of ``model.arch``, the method's ``ordering`` and ``loss`` terms (checked against the
run-time witness: tests/stages/test_witness.py)."""
PER_METHOD = frozenset({"ordering", "loss"})
PARAMS_MODULE = "stages.params"
_MODULE = re.compile(r"python -m ([\w.]+)")
_SLOT = re.compile(r"^\$\{item\.\w+_\d+\}$")


@dataclass
class StageDeps:
    """The generated code deps of one stage: ``shared`` by all its items, and per method
    (per-method stages only) the files beyond those."""

    module: str
    shared: list[str]
    per_method: dict[str, list[str]] = field(default_factory=dict)


class Planner:
    """Computes `StageDeps` from the import graph, the registries and the params."""

    def __init__(self, root: Path, params: Params) -> None:
        self.graph: Graph = scan(root)
        self.params = params
        self.records = {kind: record_modules(kind) for kind in REGISTRIES}
        unknown = self.graph.collectors - {r.collector for r in REGISTRIES.values()}
        if unknown:
            raise InputError(
                f"pipeline.deps: {sorted(unknown)} discover plug-in files (`collect`) but are "
                "not registries of pipeline/deps/records.py; add them there"
            )

    def files(self, modules: set[str]) -> set[str]:
        """The files of the closure of ``modules`` and their resources (a file inside a
        listed resource folder left out)."""
        paths = self.graph.paths(self.graph.closure(modules))
        return {p.as_posix() for p in paths if not any(a in paths for a in p.parents)}

    def per_method(self, module: str) -> bool:
        """Whether ``module`` runs per-method records (a method's ordering or loss terms)."""
        return bool(set(self._uses(module)) & PER_METHOD)

    def _uses(self, module: str) -> tuple[str, ...]:
        if module in USES:
            return USES[module]
        closure = self.graph.closure({module})  # not declared: every registry it loads
        kinds = [k for k, r in REGISTRIES.items() if r.collector in closure]
        return tuple("model" if k == "models" else k for k in kinds)

    def _selected(self, use: str, method: str | None) -> tuple[set[str], list[str]]:
        """Record modules of ``use`` (and template lines) for the stage / ``method``."""
        if use in ("sources", "metrics", "losses", "orderings", "posts"):
            return set(self.records[use].values()), []
        if use == "source":
            return {self.records["sources"][self.params.dataset.name]}, []
        if use == "transfer":
            return {self.records["sources"][self.params.transfer.name]}, []
        if use == "model":
            families = set(self.records["models"].values())
            beyond = set().union(*(self.graph.closure({f}) - {f} for f in families))
            return beyond, [FAMILY]
        assert method is not None, use
        m = self.params.methods[method]
        if use == "ordering":
            return {self.records["orderings"][m.ordering]}, []
        names = [*m.loss, *referenced_losses(m.terms, self.records["losses"])]
        return {self.records["losses"][n] for n in names}, []

    def stage(self, module: str, methods: Sequence[str] | None) -> StageDeps:
        uses = self._uses(module)
        modules = {module}
        lines: list[str] = []
        for use in (u for u in uses if u not in PER_METHOD):
            chosen, templates = self._selected(use, None)
            modules |= chosen
            lines += templates
        shared = self.files(modules)
        out = StageDeps(module, [*sorted(shared), *lines])
        for method in methods or ():
            own: set[str] = set()
            for use in (u for u in uses if u in PER_METHOD):
                own |= self._selected(use, method)[0]
            out.per_method[method] = sorted(self.files(own) - shared)
        return out


def _module(stage: Mapping[str, Any]) -> str | None:
    body = stage.get("do", stage)
    match = _MODULE.search(str(body.get("cmd", "")))
    return match.group(1) if match else None


def _is_code(dep: str) -> bool:
    path = dep.split("${", 1)[0]
    if _SLOT.match(dep) or dep == FAMILY or path.startswith(f"{paths.CODE.as_posix()}/"):
        return True
    under = path.startswith(("pipeline/", "stages/")) or path in ("pipeline", "stages")
    return under and not Path(path).is_relative_to(RESOURCES)


def _outermost(deps: list[str]) -> list[str]:
    """``deps`` without the paths inside another listed path (a file in a listed folder)."""
    listed = set(deps)
    return [d for d in deps if not any(a.as_posix() in listed for a in Path(d).parents)]


def params_dep(name: str, stage: Mapping[str, Any]) -> list[str]:
    """A stage's params dep: its slice (`pipeline.deps.slices`); none for the `params` stage,
    the only one that lists `params:` (the sections of params.yaml)."""
    body = stage.get("do", stage)
    if name == "params":
        return []
    if body.get("params"):
        raise InputError(
            f"dvc.yaml: stage {name!r} lists `params:`; a stage's params deps are its slice "
            f"(data/params/{name}.yaml, pipeline/deps/slices.py `KEYS`): add the keys there"
        )
    known = {k.partition("@")[0] for k in slices.KEYS}
    if name not in known:
        raise InputError(f"dvc.yaml: stage {name!r} has no `KEYS` entry in pipeline/deps/slices.py")
    return [slices.dep(f"{name}@${{key}}" if "foreach" in stage else name)]


def code_dep(planner: Planner, module: str, per_method_stage: bool) -> list[str]:
    """A stage's code deps in dvc.yaml: its digest (`pipeline.deps.digest`), per method where
    the stage runs per-method records; the `params` stage, which writes the digests, depends
    on all the code."""
    if module == PARAMS_MODULE:
        return ["pipeline", "stages"]
    own = per_method_stage and planner.per_method(module)
    return [f"{paths.CODE.as_posix()}/{digest_name(module, '${key}' if own else None)}.txt"]


SKIP = frozenset({"stages", "stages.common", PARAMS_MODULE})
"""Modules of ``stages/`` without a digest: no stage, or the `params` stage itself."""


def digest_name(module: str, method: str | None = None) -> str:
    """``stages.train`` and ``baseline`` → ``train@baseline`` (``data/code/<name>.txt``)."""
    stem = module.rpartition(".")[2]
    return f"{stem}@{method}" if method else stem


def code_files(root: Path, params: Params) -> dict[str, list[str]]:
    """``{digest name: the files and resource folders its stage runs}`` for every stage
    module of ``root/stages`` (per method where it runs per-method records), the family of
    the params' ``model.arch``."""
    planner = Planner(root, params)
    family = FAMILY.replace("${model.arch}", params.model.arch)
    methods = list(params.methods)
    out = {}
    for module in sorted(m for m in planner.graph.files if m.startswith("stages.")):
        if module in SKIP:
            continue
        per_method = planner.per_method(module)
        plan = planner.stage(module, methods if per_method else None)
        shared = [family if f == FAMILY else f for f in plan.shared]
        if not per_method:
            out[digest_name(module)] = shared
        for method, own in plan.per_method.items():
            out[digest_name(module, method)] = shared + own
    return out


def var_tables(params: Params) -> dict[str, dict[str, dict[str, str]]]:
    """The generated ``vars`` of dvc.yaml: the trained methods (``method_code``), the
    ``post:`` entries (``post_code``) and both together (``eval_code``)."""
    return {
        VARS: {m: {"ordering": params.methods[m].ordering} for m in params.methods},
        POST_VARS: {e: {"base": p.base} for e, p in params.post.items()},
        EVAL_VARS: {
            **{m: {"kind": "method"} for m in params.methods},
            **{e: {"kind": "post"} for e in params.post},
        },
    }


def render(text: str, root: Path, params: Params) -> str:
    """``text`` (dvc.yaml) with every stage's code deps generated and the `vars` block."""
    doc = yaml.safe_load(text)
    planner = Planner(root, params)
    lines = text.splitlines()
    tables = var_tables(params)
    for name, stage in doc["stages"].items():
        module = _module(stage)
        if module is None or module not in planner.graph.files:
            continue
        per_method = stage.get("foreach") in ("${methods}", f"${{{VARS}}}")
        generated = code_dep(planner, module, per_method) + params_dep(name, stage)
        old = (stage.get("do", stage)).get("deps") or []
        kept = [d for d in old if not _is_code(str(d)) and d not in generated
                and not str(d).startswith(f"{slices.FOLDER.as_posix()}/")]  # fmt: skip
        dvcyaml.set_deps(lines, name, _outermost(generated + kept))
        if per_method:
            dvcyaml.set_foreach(lines, name, f"${{{VARS}}}")
    note = [
        "(do not edit; `--check` fails when it is stale): per method, its ordering; per",
        "`post:` entry, its base; every row the evaluate stage runs; the stages' code deps",
        "are the digests the `params` stage writes (pipeline/deps).",
    ]
    dvcyaml.set_vars(lines, dvcyaml.vars_block(tables, note))
    out = "\n".join(lines) + ("\n" if text.endswith("\n") else "")
    dvcyaml.check_only_deps_changed(text, out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    import pipeline.deps

    doc = pipeline.deps.__doc__
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        "python -m pipeline.deps", description=doc, formatter_class=raw
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite dvc.yaml's code deps")
    mode.add_argument("--check", action="store_true", help="exit 1 (with a diff) if stale")
    mode.add_argument("--show", metavar="STAGE", help="print one stage's deps as DVC reads them")
    parser.add_argument("--dvc-yaml", default="dvc.yaml", type=Path)
    parser.add_argument("--params", default="params.yaml", type=Path)
    ns = parser.parse_args(argv)
    logging.basicConfig(level="INFO", format="%(levelname)s %(name)s: %(message)s")
    try:
        text = ns.dvc_yaml.read_text(encoding="utf-8")
        new = render(text, ns.dvc_yaml.resolve().parent, load_params(ns.params))
    except (OSError, InputError) as e:
        log.error("%s", e)
        return 2
    if ns.show:
        return _show(new, ns.show, ns.params)
    if ns.write:
        if new != text:
            ns.dvc_yaml.write_text(new, encoding="utf-8")
        log.info("%s: code deps %s", ns.dvc_yaml, "rewritten" if new != text else "up to date")
        return 0
    if new == text:
        log.info("%s: code deps up to date", ns.dvc_yaml)
        return 0
    diff = difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                str(ns.dvc_yaml), f"{ns.dvc_yaml} (generated)")  # fmt: skip
    sys.stdout.writelines(diff)
    log.error("%s is stale: run `python -m pipeline.deps --write` and commit it", ns.dvc_yaml)
    return 1


def resolved_deps(text: str, target: str, params: Mapping[str, Any]) -> list[str]:
    """The deps of stage ``target`` (``train@baseline``) of dvc.yaml ``text`` as DVC resolves
    them: the item's slots, ``${key}`` and ``${model.arch}`` (from the raw ``params``)."""
    doc = yaml.safe_load(text)
    name, _, key = target.partition("@")
    stage = doc["stages"].get(name)
    if stage is None:
        raise InputError(f"no stage {name!r} in dvc.yaml; known: {sorted(doc['stages'])}")
    tables = {k: t for v in doc.get("vars") or [] for k, t in v.items()}
    table = tables.get(str(stage.get("foreach", "")).strip("${}")) or {}
    item: dict[str, str] = table.get(key, {})
    out = []
    for dep in stage.get("do", stage).get("deps", []):
        dep = re.sub(r"\$\{item\.(\w+)\}", lambda m: str(item[m.group(1)]), dep)
        dep = dep.replace("${key}", key).replace("${model.arch}", str(params["model"]["arch"]))
        out.append(dep)
    return out


def _show(text: str, target: str, params: Path) -> int:
    """Print ``target``'s deps as DVC resolves them; its code digest as the files it lists."""
    raw = yaml.safe_load(params.read_text(encoding="utf-8"))
    files: dict[str, list[str]] | None = None
    for dep in resolved_deps(text, target, raw):
        name = dep.removeprefix(f"{paths.CODE.as_posix()}/").removesuffix(".txt")
        if name == dep:
            sys.stdout.write(f"{dep}\n")
            continue
        files = files or code_files(params.resolve().parent, load_params(params))
        sys.stdout.writelines(f"{f}  (in {dep})\n" for f in files[name])
    return 0
