"""Typed-config helpers shared by the plug-in records (no torch, no params import).

A plug-in's ``Config`` is a frozen dataclass whose fields carry their own checks:
``Literal[...]`` for choices and ``Annotated[float, Range(gt=0)]`` for ranges, next to the
field. ``pipeline.params`` reads these annotations when it loads a params.yaml section into
the config, so each check lives once and its error names the params key.
"""

from __future__ import annotations

from dataclasses import dataclass


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
