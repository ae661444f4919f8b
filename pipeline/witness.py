"""The run-time witness of what a stage reads (issue 42): opt-in, independent of the planner.

With ``PIPELINE_WITNESS=<dir>`` set, `stages.common.setup` hands the stage a recording view
of its `Params` (:func:`watch`) and starts a tracer (:func:`start`); `stages.common.run_stage`
writes ``<dir>/<stage>.json`` at the end (:func:`dump`; ``<stage>`` is DVC's ``DVC_STAGE``,
``train@baseline``). It holds:

- ``keys``: the params keys the stage read, dotted as params.yaml spells them
  (``train.seed``, ``model.bert.pooling``, ``methods.baseline.loss``). A leaf is recorded when
  its value is read; a config object passed on is recorded leaf by leaf as its fields are
  read (``dataclasses.asdict`` reads them all). A dict section (``methods``, ``orderings``,
  ``post``, the sources, families and metrics) records ``<path>.<key>`` for each entry
  looked up or tested (``m in params.post``: ``post.<m>``, present or not) and ``<path>.*``
  when the code iterates its keys (it depends on which entries exist). An empty section is a
  leaf (``model.cross_encoder: {}``). A method's loss terms are one key
  (``methods.<m>.loss``, the list).
- ``files``: the project files (under ``pipeline/`` and ``stages/``) of which a function ran
  after params.yaml was loaded — a module body run by an import is not counted (registries
  import every plug-in file; only the ones whose code runs are the stage's), nor is the
  validation inside `load_params` (the ``params`` stage's job) — and the project files the
  stage opened (resources).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from pipeline.config import key_of

ENV = "PIPELINE_WITNESS"
T = TypeVar("T")
HIDDEN = {"sources", "families", "metrics", "config", "ordering_keys"}
"""Fields holding a plug-in dict or config whose entries params.yaml puts one level up
(``dataset.sources[s]`` is ``dataset.<s>``, ``post.<e>.config.lambda_`` is ``post.<e>.lambda``,
``methods.<m>.ordering_keys[k]`` is ``methods.<m>.<k>``)."""
RENAMED = {"terms": "loss"}
ROOTS = ("pipeline", "stages")
NEWLOCALS = inspect.CO_NEWLOCALS

_paths: dict[int, str] = {}
_keys: set[str] = set()
_files: set[str] = set()
_patched: set[type] = set()
_root = Path.cwd()


def enabled() -> bool:
    return bool(os.environ.get(ENV))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Recording(dict):
    """A dict section that records the entries read (see the module doc)."""

    path = ""

    def __getitem__(self, key: Any) -> Any:
        value = super().get(key, _Recording)
        if id(value) not in _paths:  # a leaf or a missing key (a section: read inside it)
            _keys.add(_join(self.path, str(key)))
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        value = super().get(key, _Recording)
        if id(value) not in _paths:
            _keys.add(_join(self.path, str(key)))
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if id(super().get(key, _Recording)) not in _paths:  # absent, or a leaf
            _keys.add(_join(self.path, str(key)))
        return super().__contains__(key)

    def __iter__(self) -> Any:
        _keys.add(_join(self.path, "*"))
        return super().__iter__()

    def keys(self) -> Any:
        _keys.add(_join(self.path, "*"))
        return super().keys()

    def __len__(self) -> int:
        _keys.add(_join(self.path, "*"))
        return super().__len__()

    def items(self) -> Any:
        _keys.update(_join(self.path, str(k)) for k in dict.__iter__(self))
        return super().items()

    def values(self) -> Any:
        _keys.update(_join(self.path, str(k)) for k in dict.__iter__(self))
        return super().values()


def _getattribute(self: Any, name: str) -> Any:
    value = object.__getattribute__(self, name)
    path = _paths.get(id(self))
    fields = type(self).__dataclass_fields__
    if path is not None and name in fields and id(value) not in _paths:
        _keys.add(_join(path, RENAMED.get(name, key_of(name))))
    return value


def _section(items: dict[Any, Any], path: str) -> _Recording:
    out = _Recording(items)
    out.path = path
    _paths[id(out)] = path
    return out


def _wrap(value: Any, path: str) -> Any:
    """``value`` registered under ``path``: dicts become recording, dataclasses patched."""
    if isinstance(value, dict) and value:  # an empty one is a leaf: its reads are recorded
        return _section({k: _wrap(v, _join(path, str(k))) for k, v in value.items()}, path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.name in RENAMED:
                continue  # the loss terms: one key, the list
            inner = path if f.name in HIDDEN else _join(path, key_of(f.name))
            child = object.__getattribute__(value, f.name)
            empty = f.name in HIDDEN and child == {}  # its lookups: keys one level up
            wrapped = _section({}, inner) if empty else _wrap(child, inner)
            if wrapped is not child:
                object.__setattr__(value, f.name, wrapped)
        cls = type(value)
        if cls not in _patched:
            cls.__getattribute__ = _getattribute  # type: ignore[method-assign]
            _patched.add(cls)
        _paths[id(value)] = path
    return value


def watch(params: T) -> T:
    """``params`` (the same object) recording every key read from now on."""
    return _wrap(params, "")


def _trace(
    frame: FrameType, event: str, arg: Any, flag: int = NEWLOCALS, seen: set[str] = _files
) -> None:
    code = frame.f_code  # (bound defaults: still there while the interpreter shuts down)
    if code.co_flags & flag:  # a function, not a module or class body
        seen.add(code.co_filename)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and isinstance(args[0], (str, os.PathLike)):
        _files.add(os.fspath(args[0]))


def attach(params: T) -> T:
    """Under ``PIPELINE_WITNESS``: ``params`` recording every key read, and the files run
    recorded from now on (`watch`, `start`); otherwise ``params`` itself."""
    if not enabled():
        return params
    watched = watch(params)
    start()
    return watched


def start() -> None:
    """Record the project files run and opened from now on (this process)."""
    global _root
    _root = Path.cwd().resolve()
    sys.settrace(_trace)
    threading.settrace(_trace)
    sys.addaudithook(_audit)


def project_files(seen: set[str], root: Path) -> list[str]:
    """The files of ``seen`` under ``root``'s ``pipeline/`` and ``stages/``, relative."""
    out = set()
    for name in seen:
        path = Path(name)
        path = path if path.is_absolute() else root / path
        try:
            rel = path.resolve().relative_to(root)
        except (ValueError, OSError):
            continue
        if rel.parts and rel.parts[0] in ROOTS and "__pycache__" not in rel.parts:
            out.add(rel.as_posix())
    return sorted(out)


def dump(label: str) -> None:
    """Write ``$PIPELINE_WITNESS/<DVC_STAGE or label>.json``."""
    sys.settrace(None)
    threading.settrace(None)
    folder = Path(os.environ[ENV])
    folder.mkdir(parents=True, exist_ok=True)
    name = os.environ.get("DVC_STAGE") or label
    files = project_files(set(_files), _root)
    record = {"stage": name, "keys": sorted(_keys), "files": files}
    (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def raw(tree: dict[str, Any]) -> dict[str, Any]:
    """params.yaml as read raw (`pipeline.profile`), recording the keys read like `watch`."""
    return _wrap(tree, "")


def reset() -> None:
    """Forget everything recorded and restore the patched classes (for tests)."""
    for cls in _patched:
        del cls.__getattribute__
    _patched.clear()
    _paths.clear()
    _keys.clear()
    _files.clear()
