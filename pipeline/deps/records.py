"""Which plug-in files a stage runs: the records of the registries, read at run time.

The interface to the plug-in packages is narrow on purpose (another change may reshape the
records): a registry is a dict ``name → record`` in its package (``pipeline.train.losses.
LOSSES``, …), and a record's file is the module of the registry's package that holds it as a
module-level value (``RECORD = …`` or inside a ``RECORDS`` table), or else the module of its
function or class. Model families are listed from their file names
(``pipeline.models.family_names``), so no torch import is needed. A method's records
come from params.yaml through the project's params loader: its ``ordering``, its loss terms
and any loss a term's config names (EqualizeIR's ``weak_loss``).
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pipeline.errors import InputError


@dataclass(frozen=True)
class Registry:
    """``package``: where the records live; ``attr``: the registry dict in it (``None``: model
    families, one file per ``model.arch`` value); ``collector``: the module that discovers
    the package's files (``pipeline.config.collect``)."""

    package: str
    attr: str | None
    collector: str


REGISTRIES = {
    "sources": Registry("pipeline.data", "SOURCES", "pipeline.data"),
    "orderings": Registry("pipeline.ordering", "ORDERINGS", "pipeline.ordering"),
    "losses": Registry("pipeline.train.losses", "LOSSES", "pipeline.train.losses"),
    "metrics": Registry("pipeline.metrics", "METRICS", "pipeline.metrics"),
    "models": Registry("pipeline.models", None, "pipeline.models"),
    "posts": Registry("pipeline.post", "POSTS", "pipeline.post"),
}


def record_modules(kind: str) -> dict[str, str]:
    """``record name → module`` of every record of registry ``kind``."""
    reg = REGISTRIES[kind]
    if reg.attr is None:
        from pipeline.models import family_names

        return {name: f"{reg.package}.{name}" for name in family_names()}
    table: dict[str, Any] = getattr(importlib.import_module(reg.package), reg.attr)
    return {name: _holder(record, reg.package, table, kind) for name, record in table.items()}


def _holds(module: ModuleType, record: object, table: object) -> bool:
    for value in vars(module).values():
        if value is record:
            return True
        if (
            isinstance(value, dict)
            and value is not table
            and any(v is record for v in value.values())
        ):
            return True
    return False


def _holder(record: object, package: str, table: object, kind: str) -> str:
    """The module of ``package`` (not the package itself) that defines ``record``."""
    modules = sorted(
        (n, m)
        for n, m in list(sys.modules.items())
        if n.startswith(f"{package}.") and isinstance(m, ModuleType)
    )
    holders = [n for n, m in modules if _holds(m, record, table)]
    if len(holders) == 1:
        return holders[0]
    code = next(
        (getattr(record, a) for a in ("fn", "cls", "term") if getattr(record, a, None)), None
    )
    own = getattr(code, "__module__", None)
    if own in holders or (not holders and own and own.startswith(f"{package}.")):
        return str(own)
    raise InputError(
        f"pipeline.deps: cannot tell which file of {package} defines the {kind} record "
        f"{getattr(record, 'name', record)!r} (held by {holders or 'no module'}); define it as "
        "a module-level RECORD (or in RECORDS) of one plug-in file"
    )


def referenced_losses(terms: Any, known: dict[str, str]) -> list[str]:
    """Loss names that the configs of ``terms`` (``(name, config)`` pairs) name in a string
    field or as the keys of a mapping field, recursively through the named losses' default
    configs (``weak_loss: margin``, ``weak_loss: {penalty: {...}}``)."""
    from pipeline.train.losses import get_record

    out: list[str] = []
    todo = [cfg for _, cfg in terms]
    while todo:
        cfg = todo.pop()
        if not dataclasses.is_dataclass(cfg):
            continue
        for f in dataclasses.fields(cfg):
            value = getattr(cfg, f.name)
            named = [value] if isinstance(value, str) else list(value) if isinstance(
                value, Mapping) else []  # fmt: skip
            for name in named:
                if name not in known or name in out:
                    continue
                out.append(name)
                config = get_record(name).config
                fields = dataclasses.fields(config)
                if all(_has_default(x) for x in fields):
                    todo.append(config())
    return out


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
