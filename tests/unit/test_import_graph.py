"""The package's import graph flows one way (issue 31): no import cycle between modules, and
at most one import that goes up a layer.

Definitions, as this test computes them:

- **module**: a ``.py`` file of ``pipeline/`` (a package's ``__init__.py`` is the package).
- **import**: an ``import x`` or ``from x import y`` statement of a module naming another
  module of ``pipeline`` (``from pkg import name`` counts ``pkg.name`` when that is a module,
  else ``pkg``), wherever it is (module level or inside a function: a deferred import still
  runs), except under ``if TYPE_CHECKING:`` (type annotations only, never executed). The
  plug-in registries find their records by name at run time (``pipeline.config.collect``,
  ``pipeline.plugins``): those imports are not statements and are not edges, which is how
  records register upward.
- **unit**: the deepest package holding a module (``pipeline.train.losses.poe`` →
  ``pipeline.train.losses``; a package's ``__init__`` → the package itself), or the module
  itself at the top level of ``pipeline`` (``pipeline.params``).
- **layer**: a unit's index in :data:`LAYERS` (0 = bottom). Every unit has one. An import is
  **upward** when the imported module's unit is in a higher layer than the importer's; imports
  within a layer are allowed as long as the units of each layer form no cycle.

The one upward import allowed is EqualizeIR's: the ``poe`` loss term's ``prepare`` hook
trains its weak learner with the trainer itself (``pipeline.train.weak``).
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pipeline"

LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(f"pipeline{'.' + u if u else ''}" for u in layer)
    for layer in (
        # foundations: no project imports
        ("", "errors", "paths", "progress", "timing", "coverage"),
        ("config", "schemas", "stats", "model_test", "model_power", "ties",
         "dvc_cache"),  # configs, tests, …
        # I/O, plug-in discovery, sections, checksums, the run-time witness of params reads
        ("io", "plugins", "sections", "manifest", "witness"),
        # the typed params.yaml: reads records by name, imports no plug-in; the digests of
        # the params sections in use (profile)
        ("params", "profile"),
        # plug-in packages (records: sources, orderings, loss terms, metrics, model families)
        # and the libraries they use (bias scores, BM25)
        ("bias", "retrieval", "data", "ordering", "train.losses", "metrics", "models", "post"),
        # what the stages run: training, reranking, evaluation of any run, provenance, audits
        ("train", "rerank", "provenance", "measures", "evaluate_run", "audit", "doctor",
         "doctor_checkpoints",
         "doctor_exp", "doctor_cache", "doctor_queue",
         "pyterrier"),
        ("report", "grid", "deps"),  # tables, plots, docs; the grid on a cluster; code deps
        ("conformance",),  # every plug-in checked where params, deps and the report list it
    )
)  # fmt: skip
"""The package's layers, bottom first (see the module docstring)."""
ALLOWED_UPWARD = {("pipeline.train.losses.poe", "pipeline.train.weak")}
"""The upward imports the design allows (at most one)."""


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of the package that module ``name`` imports (see the module docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for node in ast.walk(tree) if _type_checking(node) for n in ast.walk(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]  # fmt: skip
        out |= {t for t in map(resolve, targets) if t and t.startswith("pipeline") and t != name}
    return out


def unit(name: str, known: dict[str, Path]) -> str:
    if known[name].name == "__init__.py" or name.count(".") < 2:
        return name
    return name.rpartition(".")[0]


@functools.cache
def graph() -> dict[str, set[str]]:
    """Every module's imports (computed once per test session)."""
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer_of(name: str) -> int:
    return next((i for i, layer in enumerate(LAYERS) if name in layer), -1)


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_every_unit_has_a_layer() -> None:
    known = modules()
    missing = sorted({unit(m, known) for m in known} - set().union(*LAYERS))
    assert missing == [], f"place these packages in LAYERS: {missing}"


def test_imports_flow_down_the_layers() -> None:
    """At most one import goes up a layer (and it is the allowed one); within a layer the
    units form no cycle; `params` imports no plug-in package."""
    known, edges = modules(), graph()
    upward = sorted(
        (a, b) for a, targets in edges.items() for b in targets
        if layer_of(unit(b, known)) > layer_of(unit(a, known))
    )  # fmt: skip
    assert len(upward) <= 1 and set(upward) <= ALLOWED_UPWARD, upward
    units: dict[str, set[str]] = defaultdict(set)
    for a, targets in edges.items():
        for b in targets:
            ua, ub = unit(a, known), unit(b, known)
            if ua != ub and (a, b) not in upward and not ua.startswith(f"{ub}."):
                units[ua].add(ub)
    assert cycles(units) == []
    plugin_packages = {f"pipeline.{p}" for p in ("data", "ordering", "train.losses", "metrics",
                                                  "models", "post")}  # fmt: skip
    assert not {unit(b, known) for b in edges["pipeline.params"]} & plugin_packages


def test_the_graph_sees_deferred_imports_and_skips_type_only_ones(tmp_path: Path) -> None:
    """The checker itself: an import inside a function is an edge, one under
    ``if TYPE_CHECKING:`` is not; a cycle is found."""
    known = {"pipeline.a": tmp_path / "a.py", "pipeline.b": tmp_path / "b.py"}
    known["pipeline.a"].write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pipeline import b\n"
    )
    known["pipeline.b"].write_text("def f():\n    import pipeline.a\n")
    edges = {name: imports(name, path, known) for name, path in known.items()}
    assert edges == {"pipeline.a": set(), "pipeline.b": {"pipeline.a"}}
    assert cycles({**edges, "pipeline.a": {"pipeline.b"}}) == [["pipeline.a", "pipeline.b"]]
