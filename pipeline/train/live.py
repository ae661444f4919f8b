"""Training logs through DVCLive, where DVC users look (``dvc plots``, ``dvc exp show``, the VS
Code extension, Studio).

``train@<method>`` opens one :class:`TrainLog` on ``dvclive/<method>/`` and gives every fold
(and seed) model a :meth:`TrainLog.run` sink. The loop calls the sink every
``train.log_every`` steps with the loss and learning rate, so each run gets its own history
files ``dvclive/<method>/plots/metrics/[seed-<n>/]fold-<k>/{loss,lr}.tsv`` (columns ``step``
and the value; the step restarts at 1 for each fold) and ``dvclive/<method>/metrics.json``
holds each run's last values plus ``loss``, the mean final loss over runs. DVCLive is opened
with ``dvcyaml=None``: its default would rewrite dvc.yaml, which declares these files itself.

Any code that runs inside a training step can log more named values with
:func:`pipeline.progress.record` (e.g. an adversary's accuracy, a weak learner's
effectiveness): they are averaged over the same window as the loss and written next to it as
``<run>/<name>.tsv``. Outside training :func:`record` does nothing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.progress import StepSink, collecting, record

__all__ = ["StepSink", "TrainLog", "collecting", "record"]


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
