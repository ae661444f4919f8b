"""Typed-config helpers shared by the plug-in records (no torch, no params import).

A plug-in's ``Config`` is a frozen dataclass whose fields carry their own checks:
``Literal[...]`` for choices and ``Annotated[float, Range(gt=0)]`` for ranges, next to the
field. ``pipeline.params`` reads these annotations when it loads a params.yaml section into
the config, so each check lives once and its error names the params key.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


def did_you_mean(value: object, known: Iterable[object]) -> str:
    """``"; did you mean 'x'?"`` for the known name closest to ``value``, else ``""``."""
    close = difflib.get_close_matches(str(value), [str(k) for k in known], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def lookup(table: Mapping[str, T], name: str, what: str) -> T:
    """``table[name]``; an unknown name raises ``ValueError`` naming ``what`` and listing the
    known names, with the closest one as a "did you mean" (every registry's lookup)."""
    if name not in table:
        hint = did_you_mean(name, table)
        raise ValueError(f"unknown {what} {name!r}; known: {sorted(table)}{hint}")
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
