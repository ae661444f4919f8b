"""The ``train`` section of params.yaml as the trainer's typed config (no torch import)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pipeline.config import Checked, ParamsError, Range


@dataclass(frozen=True)
class TrainConfig(Checked):
    """Training hyper-parameters: the ``train`` section (defaults = the default profile).

    ``batch_size``: training groups per step (one Grep-BiasIR query's F/M/N positives);
    ``group_size``: one positive + ``group_size − 1`` negatives of a query per group.
    ``warmup_steps`` wins over ``warmup_ratio`` (a share of the total steps) when given.
    ``max_steps`` caps the steps of ``epochs`` passes over the triples; each pass reads the
    triples in the same order. ``grad_clip`` ≤ 0 or ``None`` disables clipping. ``devices``
    > 1 trains on that many DDP ranks, each taking ``batch_size / devices`` triples of every
    global batch of ``batch_size``. ``length_window`` = W groups triples of similar length
    into batches within each run of W consecutive batches (``pipeline.train.loop.batch_plan``).
    ``checkpoint_every``: a resumable checkpoint every N steps. ``seeds``: train each method
    once per seed (``seed-<n>/`` folders; default 1, 2, 3); ``None`` = once, seeded by ``seed``.
    """

    seed: int = 42
    batch_size: Annotated[int, Range(ge=1)] = 3
    lr: Annotated[float, Range(gt=0)] = 1.0e-4
    epochs: Annotated[int, Range(ge=1)] = 1
    group_size: Annotated[int, Range(ge=2)] = 6
    warmup_ratio: Annotated[float, Range(ge=0, le=1)] = 0.1
    warmup_steps: Annotated[int, Range(ge=0)] | None = None
    max_steps: Annotated[int, Range(ge=1)] | None = None
    log_every: Annotated[int, Range(ge=1)] = 5
    grad_clip: float | None = 1.0
    threads: Annotated[int, Range(ge=1)] = 1
    workers: Annotated[int, Range(ge=1)] = 2
    device: str = "auto"
    devices: Annotated[int, Range(ge=1)] = 1
    checkpoint_every: Annotated[int, Range(ge=1)] | None = None
    seeds: Annotated[list[int], Range(ge=0)] | None = field(default_factory=lambda: [1, 2, 3])
    length_window: Annotated[int, Range(ge=1)] | None = None
    keep_models: Literal["first", "all"] = "first"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.batch_size % self.devices:
            raise ParamsError(
                f"params key 'batch_size': {self.batch_size} is not a multiple of devices "
                f"({self.devices}); every process takes batch_size / devices triples of each batch"
            )
        if self.seeds is not None and (not self.seeds or len(set(self.seeds)) != len(self.seeds)):
            raise ParamsError(
                f"params key 'seeds': {self.seeds!r} must be a non-empty list of distinct "
                "seeds, or null (one model per method, seeded by train.seed)"
            )

    def total_steps(self, n_groups: int) -> int:
        """Optimiser steps for ``n_groups`` training groups."""
        steps = self.epochs * math.ceil(n_groups / self.batch_size)
        return min(steps, self.max_steps) if self.max_steps is not None else steps

    def warmup(self, total: int) -> int:
        """Warm-up steps: ``warmup_steps`` if set, else ``round(warmup_ratio × total)``."""
        return (
            self.warmup_steps if self.warmup_steps is not None else round(self.warmup_ratio * total)
        )

    def seed_runs(self) -> list[tuple[int, str]]:
        """``(seed, subfolder)`` per trained model of a method: ``[(seed, "")]`` without
        ``seeds`` (models/<m>/, runs/<m>/, eval/<m>/), else one ``seed-<n>`` folder each."""
        if self.seeds is None:
            return [(self.seed, "")]
        return [(s, f"seed-{s}") for s in self.seeds]

    def kept_runs(self) -> list[tuple[int, str]]:
        """The ``seed_runs()`` whose models are kept (``keep_models``)."""
        runs = self.seed_runs()
        return runs if self.keep_models == "all" else runs[:1]
