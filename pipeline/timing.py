"""Where a stage's time goes: named phases, summed, logged in one line at the stage's end.

``Phases`` adds up the wall seconds of named blocks (``with phases("train"): ...``); phases
of the (seed, fold) jobs that ran in worker processes come back as plain dicts and are added
with :meth:`Phases.add`. :func:`startup_seconds` is how long the process ran before the
stage's code started (interpreter start-up and imports). ``benchmarks/bench_train_phases.py``
reads the lines these write (:data:`PREFIX`) into its per-phase table.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

PREFIX = "seconds by phase:"
"""What every phase line starts with after the stage's name (the benchmark parses it)."""


class Phases:
    """Wall seconds by phase name, in the order the phases first ran."""

    def __init__(self, seconds: Mapping[str, float] | None = None) -> None:
        self.seconds: dict[str, float] = dict(seconds or {})

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add({name: time.perf_counter() - start})

    def add(self, seconds: Mapping[str, float]) -> None:
        """Add ``seconds`` (name → seconds) to the phases of the same names."""
        for name, value in seconds.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + value

    def line(self, label: str) -> str:
        """``"<label> seconds by phase: a 1.23, b 4.56"``."""
        parts = ", ".join(f"{name} {value:.2f}" for name, value in self.seconds.items())
        return f"{label} {PREFIX} {parts}"


def parse_line(line: str) -> dict[str, float]:
    """The phases of a line :meth:`Phases.line` wrote (empty when ``line`` is not one)."""
    if PREFIX not in line:
        return {}
    out: dict[str, float] = {}
    for part in line.split(PREFIX, 1)[1].split(","):
        name, _, value = part.strip().rpartition(" ")
        if name:
            out[name] = float(value)
    return out


def startup_seconds() -> float | None:
    """Seconds since this process started (Linux ``/proc``; ``None`` elsewhere): called
    first thing in a stage, its interpreter start-up and imports."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return max(uptime - int(fields[19]) / ticks, 0.0)  # field 22 (starttime), 0-based 19 after ")"


_STAGE: list[tuple[Phases, str]] = []
"""The running stage's phases and its label (``train@baseline``): one entry while it runs."""


def stage_start() -> Phases:
    """A new clock for the running stage, its process's start-up counted as the first phase
    (``stages.common.setup``); :func:`stage_line` gives its line when the stage ends."""
    phases = Phases({"start-up": startup_seconds() or 0.0})
    _STAGE[:] = [(phases, "stage")]
    return phases


def stage_label(label: str) -> None:
    """Name the running stage's clock (its arguments parsed)."""
    if _STAGE:
        _STAGE[0] = (_STAGE[0][0], label)


def stage_line() -> str | None:
    """The running stage's phase line (None before :func:`stage_start`)."""
    return _STAGE[0][0].line(_STAGE[0][1]) if _STAGE else None


def stage_reset() -> None:
    """Forget the running stage's clock (a new stage in the same process)."""
    _STAGE.clear()
