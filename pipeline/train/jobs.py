"""Fold models trained side by side (``train.workers``): one job per (seed, fold) model.

On a CPU, a small model's training steps are short matrix products that scale poorly across
the threads of one process, and a process with two threads slows down badly as soon as
anything else runs (measured on the 2-core default machine with a test job in the
background: one fold model in 171 s with 2 threads, against 45 s each for two 1-thread
processes side by side). So ``train@<method>`` hands its (seed, fold) models to
``train.workers`` processes of ``train.threads`` threads each. A job's model depends only on
its seed, data and thread count, never on which worker ran it or on how many ran, so the
results are the same with 1 worker as with 4.

Workers are started fresh (``spawn``: forking a process whose polars or torch thread pools
ran is unsafe); each receives the job context once and returns each job's training curve,
its EqualizeIR weak run and the logged rows, which the parent replays into the method's
DVCLive log in job order. With one worker (a GPU, ``torchrun``, or ``train.workers: 1``) the
jobs run in the calling process and log as they go.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from pipeline.train.live import StepSink

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """One model to train: its seed (and seed folder), fold and the fold's triples in
    training order; ``test``: the fold's test candidates (the saved model reranks them, and
    so does EqualizeIR's weak learner); ``transfer``: whether the saved model also reranks
    the held-out collection (``transfer.fold_models``)."""

    seed: int
    sub: str
    fold: int
    triples: pl.DataFrame
    test: pl.DataFrame | None = None
    transfer: bool = False

    @property
    def name(self) -> str:
        """``[seed-<n>/]fold-<k>``: the model's folder and its name in the DVCLive log."""
        return f"{self.sub}/fold-{self.fold}".lstrip("/")


@dataclass(frozen=True)
class Result:
    """What a job gives back: its training curve, EqualizeIR weak run (or None), the saved
    model's runs of the fold's test candidates and of the held-out collection (or None) and
    the seconds of its phases (``pipeline.timing``)."""

    curve: pl.DataFrame
    weak_run: pl.DataFrame | None
    run: pl.DataFrame | None = None
    transfer_run: pl.DataFrame | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)


JobFn = Callable[[Any, Job, StepSink | None], Result]
"""``fn(context, job, log)``: trains and saves one model (a module-level function)."""

_STATE: dict[str, Any] = {}


def _start(fn: JobFn, context: Any, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    logging.basicConfig(level=logging.WARNING)
    _STATE.update(fn=fn, context=context)


def _run(job: Job) -> tuple[Result, list[tuple[int, dict[str, float]]]]:
    rows: list[tuple[int, dict[str, float]]] = []
    result = _STATE["fn"](_STATE["context"], job, lambda step, v: rows.append((step, dict(v))))
    return result, rows


def run_jobs(
    fn: JobFn, context: Any, jobs: Sequence[Job], workers: int, threads: int,
    logs: Callable[[str], StepSink | None] | None = None,
) -> list[Result]:  # fmt: skip
    """Every job's result, in job order; with ``workers`` > 1 in that many fresh processes
    of ``threads`` torch threads each. ``logs(name)``: the sink of the job's log rows."""
    if workers <= 1 or len(jobs) <= 1:
        return [fn(context, job, logs(job.name) if logs else None) for job in jobs]
    count = min(workers, len(jobs))
    log.info("training %d models in %d worker processes (%d thread(s) each)",
             len(jobs), count, threads)  # fmt: skip
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(count, mp_context=spawn, initializer=_start,
                             initargs=(fn, context, threads)) as pool:  # fmt: skip
        done = list(pool.map(_run, jobs))
    for job, (_, rows) in zip(jobs, done, strict=True):
        sink = logs(job.name) if logs else None
        for step, values in rows if sink else ():
            sink(step, values)  # type: ignore[misc]
    return [result for result, _ in done]


def weak_runs(jobs: Sequence[Job], results: Sequence[Result]) -> dict[str, pl.DataFrame]:
    """Each seed folder's EqualizeIR weak runs of its folds, concatenated."""
    parts: Mapping[str, list[pl.DataFrame]] = {}
    for job, result in zip(jobs, results, strict=True):
        if result.weak_run is not None:
            parts.setdefault(job.sub, []).append(result.weak_run)  # type: ignore[attr-defined]
    return {sub: pl.concat(runs) for sub, runs in parts.items()}
