"""The project's import graph, read from its source with `ast` (nothing is imported).

A module's edges are every project module that running it can import: ``import a.b`` and
``from a import b`` at any depth (inside functions too: lazy imports count), relative imports
resolved against the module's package, the packages that importing a submodule executes
(``pipeline.train.losses.margin`` runs ``pipeline/__init__.py``, ``pipeline/train/__init__.py``
and ``pipeline/train/losses/__init__.py``), and ``importlib.import_module`` of a literal
name. Imports under ``if TYPE_CHECKING:`` never run and are left out. A registry package
imports its plug-in files itself (``pipeline.config.collect``); those edges are not in the
graph: which records a stage runs is decided by `pipeline.deps.records` from params.yaml.
Any other dynamic import is an error naming the file and line, so none goes unseen.

A module's *resources* are the files under ``pipeline/resources/`` that it names in a
module-level constant built from ``Path(__file__)`` (``RESOURCES = Path(__file__).parent /
"resources" / "vega"``), the one way the project's code locates shipped data.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import InputError

PACKAGES = ("pipeline", "stages")
"""The top-level packages whose modules are project code."""
RESOURCES = Path("pipeline/resources")
DISCOVERERS = frozenset({"pipeline.config", "pipeline.deps.records", "pipeline.plugins"})
"""The modules allowed a non-literal ``import_module``: ``collect``, the registries' own
discovery (its callers are the registries of `pipeline.deps.records`), this command's
loading of those registries, and ``pipeline.plugins``, which imports the registry packages
it names (its edges: those packages, :data:`PLUGIN_PACKAGES`)."""
PLUGIN_PACKAGES = {"pipeline.plugins": ("PACKAGES",)}
"""A discoverer → its module-level dicts whose string values name the packages it imports by
name (``pipeline.plugins.PACKAGES``: kind → registry package)."""


@dataclass
class Graph:
    """``files``: module name → path (relative to the root); ``edges``: module → the project
    modules it imports; ``resources``: module → resource paths it names; ``collectors``: the
    modules that call ``collect`` (registry packages)."""

    root: Path
    files: dict[str, Path] = field(default_factory=dict)
    edges: dict[str, set[str]] = field(default_factory=dict)
    resources: dict[str, set[Path]] = field(default_factory=dict)
    collectors: set[str] = field(default_factory=set)

    def closure(self, modules: Iterable[str]) -> set[str]:
        """``modules``, their packages (``python -m stages.x`` runs ``stages/__init__.py``)
        and every project module they import, transitively."""
        seen: set[str] = set()
        todo = [p for m in modules for p in _parents(m) if p in self.files]
        while todo:
            m = todo.pop()
            if m in seen:
                continue
            seen.add(m)
            todo.extend(self.edges.get(m, ()))
        return seen

    def paths(self, modules: Iterable[str]) -> set[Path]:
        """The files of ``modules`` and the resources they name."""
        out: set[Path] = set()
        for m in modules:
            out.add(self.files[m])
            out |= self.resources.get(m, set())
        return out


def module_name(path: Path) -> str:
    """``pipeline/train/__init__.py`` → ``pipeline.train``; ``stages/train.py`` →
    ``stages.train``."""
    parts = list(path.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def scan(root: Path) -> Graph:
    """The import graph of every ``.py`` file of the project packages under ``root``."""
    root = root.resolve()
    graph = Graph(root)
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if "__pycache__" not in rel.parts:
                graph.files[module_name(rel)] = rel
    for name, rel in graph.files.items():
        tree = ast.parse((root / rel).read_text(encoding="utf-8"), filename=str(rel))
        edges, collects = _imports(tree, name, rel, graph.files)
        graph.edges[name] = edges | _named_packages(tree, name, graph.files)
        if collects:
            graph.collectors.add(name)
        graph.resources[name] = _resources(tree, root, rel)
    return graph


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _imports(
    tree: ast.Module, name: str, rel: Path, files: dict[str, Path]
) -> tuple[set[str], bool]:
    """The project modules ``tree`` imports, and whether it calls ``collect``."""
    package = name if rel.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    collects = False
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_parents(alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package, rel, node.lineno)
            found.update(_parents(base))
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            callee = _callee(node.func)
            if isinstance(node.func, ast.Name) and callee == "collect":  # pipeline.config's
                collects = True
            elif callee in ("import_module", "__import__"):
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.update(_parents(arg.value))
                elif name not in DISCOVERERS:
                    raise InputError(
                        f"{rel}:{node.lineno}: a dynamic import of a computed name; the deps of "
                        "the stages that run it cannot be read from the code. Import it by "
                        "name, or make its package a registry of pipeline/deps/records.py"
                    )
    return {m for m in found if m in files and m != name}, collects


def _named_packages(tree: ast.Module, name: str, files: dict[str, Path]) -> set[str]:
    """The packages a discoverer imports by a name kept in a module-level dict
    (:data:`PLUGIN_PACKAGES`), with their parent packages."""
    found: set[str] = set()
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Dict):
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id in PLUGIN_PACKAGES.get(name, ()):
            for value in node.value.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.update(_parents(value.value))
    return {m for m in found if m in files and m != name}


def _absolute(module: str | None, level: int, package: str, rel: Path, line: int) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".")
    if level - 1 > len(parts):
        raise InputError(f"{rel}:{line}: relative import beyond the top-level package")
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base


def _callee(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _runtime_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node of ``tree`` outside ``if TYPE_CHECKING:`` blocks (their ``else`` kept)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resources(tree: ast.Module, root: Path, rel: Path) -> set[Path]:
    """Paths under ``pipeline/resources/`` named by module-level constants built from
    ``Path(__file__)`` (``.resolve()``, ``.parent``, ``.parents[i]``, ``/ "name"``)."""
    env: dict[str, object] = {}
    out: set[Path] = set()
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        elif isinstance(stmt, ast.Assign):
            value = stmt.value
        else:
            continue
        result = _path_value(value, env, root / rel)
        for target in targets:
            if isinstance(target, ast.Name):
                env[target.id] = result
        inside = root / RESOURCES  # a file or folder in it, not the whole folder
        out |= {p for p in _flatten(result) if p.is_relative_to(inside) and p != inside}
    return {p.relative_to(root) for p in out if p.exists()}


def _flatten(value: object) -> list[Path]:
    if isinstance(value, Path):
        return [value]
    if isinstance(value, list):
        return [p for v in value for p in _flatten(v)]
    return []


def _path_value(node: ast.expr, env: dict[str, object], file: Path) -> object:
    """The path (or list of paths, for a dict or tuple of them) ``node`` evaluates to, else
    None. Only the forms above are understood; anything else is not a resource constant."""
    if isinstance(node, ast.Call) and _callee(node.func) == "Path" and len(node.args) == 1:
        arg = node.args[0]
        return file if isinstance(arg, ast.Name) and arg.id == "__file__" else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "resolve" and not node.args:
            return _path_value(node.func.value, env, file)
        return None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        base = _path_value(node.value, env, file)
        return base.parent if isinstance(base, Path) else None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
        base = _path_value(node.value.value, env, file)
        index = node.slice
        is_int = isinstance(index, ast.Constant) and isinstance(index.value, int)
        if node.value.attr == "parents" and isinstance(base, Path) and is_int:
            return base.parents[index.value]  # type: ignore[attr-defined]
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left = _path_value(node.left, env, file)
        right = node.right
        if isinstance(left, Path) and isinstance(right, ast.Constant):
            return left / str(right.value) if isinstance(right.value, str) else None
        return None
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.Dict):
        return [_path_value(v, env, file) for v in node.values if v is not None]
    if isinstance(node, ast.Tuple | ast.List):
        return [_path_value(v, env, file) for v in node.elts]
    return None
