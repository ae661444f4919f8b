"""Typed configs: how a params.yaml section becomes a plug-in's ``Config`` (no torch import).

A ``Config`` is a frozen dataclass whose fields carry their own checks, next to the field:
``Literal[...]`` for choices and ``Annotated[float, Range(gt=0)]`` for ranges. That is the
one validation mechanism: :func:`build` loads a section into its config (unknown and missing
keys refused with a "did you mean", every value checked against its annotation, the error
naming the params key), and a config that derives from :class:`Checked` runs the same checks
when code constructs it directly. Rules between fields (``lambda`` or both per-side
values) live in the config's ``__post_init__``. A field named ``lambda_`` is the key
``lambda``.

Values written by ``dvc exp run -S`` arrive as the type the key declares: DVC writes
``query_set=215`` as an int into a string key and ``lr=3e-6`` as ``3e-06``, which YAML 1.1
reads back as a string; both load as the declared type.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import pkgutil
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from pipeline.errors import InputError

T = TypeVar("T")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


class ParamsError(InputError):
    """params.yaml is missing a key, has an unknown key, or a value of the wrong type/range."""


def did_you_mean(value: object, known: Iterable[object]) -> str:
    """``"; did you mean 'x'?"`` for the known name closest to ``value``, else ``""``."""
    close = difflib.get_close_matches(str(value), [str(k) for k in known], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def collect(
    package: str,
    path: Iterable[str],
    helpers: Iterable[str],
    kind: type[T],
    what: str,
    same_name: bool = False,
) -> list[tuple[str, T]]:
    """``(module, record)`` of every plug-in module of ``package`` (found on ``path``): every
    public module (not starting with ``_``) other than ``helpers``, which must define
    ``RECORD`` (one ``kind`` record) or ``RECORDS`` (a dict of them). A record's name is the
    module's name, or the key of ``RECORDS``; ``same_name``: a record whose ``name`` is not
    its module's is an error (else the caller checks its own naming rule)."""
    out: list[tuple[str, T]] = []
    for module in sorted(m.name for m in pkgutil.iter_modules(path)):
        if module.startswith("_") or module in set(helpers):
            continue
        loaded = importlib.import_module(f"{package}.{module}")
        table = getattr(loaded, "RECORDS", None)
        if table is None and hasattr(loaded, "RECORD"):
            table = {module: loaded.RECORD}
        if not isinstance(table, dict) or not all(isinstance(r, kind) for r in table.values()):
            raise TypeError(
                f"{package.replace('.', '/')}/{module}.py must define RECORD = "
                f"{kind.__name__}(…) (every public module there is a {what}; prefix helper "
                "modules with '_')"
            )
        for record in table.values():
            if same_name and getattr(record, "name", module) != module:
                where = package.replace(".", "/")
                raise TypeError(f"{where}/{module}.py: RECORD must be named {module!r}")
            out.append((module, record))
    return out


def lookup(table: Mapping[str, T], name: str, what: str) -> T:
    """``table[name]``; an unknown name raises ``ValueError`` naming ``what`` and listing the
    known names, with the closest one as a "did you mean" (every registry's lookup)."""
    if name not in table:
        hint = did_you_mean(name, table)
        raise InputError(f"unknown {what} {name!r}; known: {sorted(table)}{hint}")
    return table[name]


@dataclass(frozen=True)
class Range:
    """Bounds of a number (or of every number in a list): ``ge``/``gt`` below, ``le`` above."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None

    def holds(self, value: float) -> bool:
        return not (
            (self.ge is not None and value < self.ge)
            or (self.gt is not None and value <= self.gt)
            or (self.le is not None and value > self.le)
        )

    def describe(self) -> str:
        """The interval, e.g. ``(0, ∞]`` or ``[0, 1]``."""
        left = (
            f"({self.gt}" if self.gt is not None else f"[{self.ge if self.ge is not None else '-∞'}"
        )
        return f"{left}, {self.le if self.le is not None else '∞'}]"


def key_of(field: str) -> str:
    """The params key of a config field (``lambda_`` → ``lambda``)."""
    return field.rstrip("_")


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a config class (with ``Annotated`` extras), by field."""
    return _hints(cls)


def fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    """The fields of config ``cls`` by params key."""
    return {key_of(f.name): f for f in dataclasses.fields(cls)}


def required(cls: type) -> list[str]:
    """The params keys of ``cls`` without a default."""
    return [
        k
        for k, f in fields(cls).items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


def defaults(cls: type) -> dict[str, Any]:
    """``{params key: default}`` of the fields of ``cls`` that have one."""
    out = {}
    for k, f in fields(cls).items():
        if f.default is not dataclasses.MISSING:
            out[k] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[k] = f.default_factory()
    return out


def build(cls: type[T], data: Any, prefix: str, owner: str = "") -> T:
    """Load the params section ``data`` (at params key ``prefix``) into config ``cls``.

    Unknown keys (with the closest known one) and missing required keys are refused (the
    latter naming ``owner``, e.g. ``loss 'poe'``, when given); every value is checked
    against its field's annotation; rules of the config's ``__post_init__`` are reported
    under ``prefix``. Raises :class:`ParamsError`.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ParamsError(f"params key {prefix!r}: expected a mapping, got {data!r}")
    known = fields(cls)
    unknown = sorted(str(k) for k in set(data) - set(known))
    if unknown:
        raise ParamsError(
            f"params key '{prefix}.{unknown[0]}' is unknown; known keys of {prefix!r}: "
            f"{sorted(known)}{did_you_mean(unknown[0], known)}"
        )
    missing = [k for k in required(cls) if k not in data]
    if missing:
        by = f" by {owner}" if owner else ""
        raise ParamsError(
            f"params key '{prefix}.{missing[0]}' is required{by} but missing; add "
            f"`{missing[0]}: <value>` under {prefix!r}"
        )
    types_ = hints(cls)
    kwargs = {
        f.name: coerce(data[k], types_[f.name], f"{prefix}.{k}")
        for k, f in known.items()
        if k in data
    }
    try:
        return cls(**kwargs)
    except ParamsError as e:
        raise ParamsError(_under(prefix, str(e))) from e
    except ValueError as e:
        raise ParamsError(f"params key {prefix!r}: {e}") from e


def _under(prefix: str, message: str) -> str:
    """A :func:`check` message about field ``'x'`` as the params key ``'prefix.x'``."""
    return re.sub(r"^params key '([^']*)'", lambda m: f"params key '{prefix}.{m[1]}'", message)


@dataclass(frozen=True)
class NoConfig:
    """The config of a plug-in without parameters (its params section is ``{}``)."""


class Checked:
    """Base of a config that checks its fields' annotations when constructed (so a config
    built in code meets the same ``Literal``/``Range`` rules as one loaded from params)."""

    def __post_init__(self) -> None:
        check(self)


def check(obj: Any) -> None:
    """Check every field of dataclass ``obj`` against its annotation (raises ParamsError
    naming the field)."""
    types_ = hints(type(obj))
    for f in dataclasses.fields(obj):
        coerce(getattr(obj, f.name), types_[f.name], key_of(f.name))


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp)).replace("NoneType", "null")


def coerce(value: Any, tp: Any, key: str) -> Any:
    """``value`` as annotation ``tp`` wants it (ints accepted where floats are, DVC's strings
    of numbers as numbers, ints as strings); raises :class:`ParamsError` naming ``key``."""
    origin = typing.get_origin(tp)
    if origin is Annotated:  # a Range next to the field
        base, *meta = typing.get_args(tp)
        out = coerce(value, base, key)
        for bound in (m for m in meta if isinstance(m, Range)):
            items = out if isinstance(out, list | tuple) else [out]
            if not all(bound.holds(v) for v in items):
                raise ParamsError(
                    f"params key {key!r}: {value!r} is out of range {bound.describe()}"
                )
        return out
    if origin is Literal:
        return _choice(value, typing.get_args(tp), key)
    if origin in (typing.Union, types.UnionType):
        return _union(value, typing.get_args(tp), key)
    if origin in (list, tuple):
        args = typing.get_args(tp)
        if not isinstance(value, list | tuple):
            raise ParamsError(f"params key {key!r}: expected a list, got {value!r}")
        items = [coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin in (dict, Mapping):  # a sub-record's settings (checked by its owner)
        if not isinstance(value, Mapping):
            raise ParamsError(f"params key {key!r}: expected a mapping, got {value!r}")
        _, tv = typing.get_args(tp)
        return {str(k): coerce(v, tv, f"{key}.{k}") for k, v in value.items()}
    return _scalar(value, tp, key)


def _choice(value: Any, choices: tuple[Any, ...], key: str) -> Any:
    if value not in choices and _is_int(value) and str(value) in choices:
        value = str(value)  # DVC: `-S dataset.msmarco_passage.query_set=215` arrives as an int
    if value not in choices:
        raise ParamsError(
            f"params key {key!r}: unknown value {value!r}; known: {list(choices)}"
            + did_you_mean(value, choices)
        )
    return value


def _union(value: Any, args: tuple[Any, ...], key: str) -> Any:
    if value is None and type(None) in args:
        return None
    errors = []
    for tp in (a for a in args if a is not type(None)):
        try:
            return coerce(value, tp, key)
        except ParamsError as e:
            errors.append(str(e).removeprefix(f"params key {key!r}: "))
    if len(errors) == 1:
        raise ParamsError(f"params key {key!r}: {errors[0]}")
    raise ParamsError(f"params key {key!r}: {value!r} fits none of: " + "; ".join(errors))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _scalar(value: Any, tp: Any, key: str) -> Any:
    if tp is float and isinstance(value, str) and _FLOAT.fullmatch(value.strip()):
        value = float(value)  # DVC writes 3e-6 as `3e-06`, a string to YAML 1.1
    if tp is str and _is_int(value):
        value = str(value)  # DVC writes `-S key=215` as an int
    ok = (
        (tp is float and (_is_int(value) or isinstance(value, float)))
        or (tp is int and _is_int(value))
        or (tp is str and isinstance(value, str))
        or (tp is bool and isinstance(value, bool))
        or (tp is Any)
    )
    if not ok:
        raise ParamsError(
            f"params key {key!r}: expected {_type_name(tp)}, got {value!r} "
            f"({type(value).__name__}); fix it in params.yaml or your `-S` override."
        )
    return float(value) if tp is float else value
