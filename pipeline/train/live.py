"""Training logs through DVCLive, where DVC users look (``dvc plots``, ``dvc exp show``, the VS
Code extension, Studio).

``train@<method>`` opens one :class:`TrainLog` on ``dvclive/<method>/`` and gives every fold
(and seed) model a :meth:`TrainLog.run` sink. The loop calls the sink every
``train.log_every`` steps with the loss and learning rate, so each run gets its own history
files ``dvclive/<method>/plots/metrics/[seed-<n>/]fold-<k>/{loss,lr}.tsv`` (columns ``step``
and the value; the step restarts at 1 for each fold) and ``dvclive/<method>/metrics.json``
holds each run's last values plus ``loss``, the mean final loss over runs. DVCLive is opened
with ``dvcyaml=None``: its default would rewrite dvc.yaml, which declares these files itself.

Any code that runs inside a training step can log more named values with :func:`record`
(e.g. an adversary's accuracy, a weak learner's effectiveness): they are averaged over the
same window as the loss and written next to it as ``<run>/<name>.tsv``. Outside training
:func:`record` does nothing.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

StepSink = Callable[[int, Mapping[str, float]], None]

_VALUES: ContextVar[dict[str, list[float]] | None] = ContextVar("train_values", default=None)


def record(name: str, value: float) -> None:
    """Log ``value`` under ``name`` for the current training step (a no-op outside one)."""
    values = _VALUES.get()
    if values is not None:
        values.setdefault(name, []).append(float(value))


@contextlib.contextmanager
def collecting(log: StepSink | None) -> Iterator[StepSink | None]:
    """Inside the block, :func:`record` collects values; the sink yielded passes each curve
    row to ``log`` with the means of the values recorded since the previous row."""
    values: dict[str, list[float]] = {}
    token = _VALUES.set(values)

    def sink(step: int, row: Mapping[str, float]) -> None:
        assert log is not None
        means = {k: statistics.fmean(v) for k, v in values.items() if v}
        values.clear()
        log(step, {**row, **means})

    try:
        yield sink if log else None
    finally:
        _VALUES.reset(token)


class TrainLog:
    """One method's DVCLive log in ``directory`` (previous files there are removed)."""

    def __init__(self, directory: str | Path) -> None:
        from dvclive import Live  # imported here: only the train stage needs it

        self.live: Any = Live(
            dir=str(directory), dvcyaml=None, save_dvc_exp=False, report=None, resume=False
        )
        self._final: dict[str, float] = {}

    def run(self, name: str) -> StepSink:
        """The sink of one trained model, logging under ``name`` (``[seed-<n>/]fold-<k>``)."""

        def sink(step: int, values: Mapping[str, float]) -> None:
            self.live.step = step
            for key, value in values.items():
                self.live.log_metric(f"{name}/{key}", value)
            if "loss" in values:
                self._final[name] = float(values["loss"])

        return sink

    def close(self) -> None:
        """Write ``metrics.json``: every run's last values and ``loss``, the mean final loss."""
        finals = [v for v in self._final.values() if math.isfinite(v)]
        if finals:
            self.live.summary["loss"] = statistics.fmean(finals)
        self.live.end()
