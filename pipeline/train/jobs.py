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

import contextlib
import logging
import multiprocessing
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

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


class Named(Protocol):
    """A job: anything with a ``name`` (its log's name), e.g. :class:`Job`."""

    @property
    def name(self) -> str: ...


J = TypeVar("J", bound=Named)
R = TypeVar("R")
JobFn = Callable[[Any, J, StepSink | None], R]
"""``fn(context, job, log)``: e.g. trains and saves one model (a module-level function)."""

_STATE: dict[str, Any] = {}


def _start(fn: JobFn[J, R], context: Any, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    logging.basicConfig(level=logging.WARNING)
    _STATE.update(fn=fn, context=context)


def _run(
    job: J, state: Mapping[str, Any] | None = None
) -> tuple[Any, list[tuple[int, dict[str, float]]]]:
    """Run ``job`` with the process's job function and context; its result and log rows."""
    rows: list[tuple[int, dict[str, float]]] = []
    state = _STATE if state is None else state
    result = state["fn"](state["context"], job, lambda step, v: rows.append((step, dict(v))))
    return result, rows


def run_jobs(
    fn: JobFn[J, R], context: Any, jobs: Sequence[J], workers: int, threads: int,
    logs: Callable[[str], StepSink | None] | None = None,
) -> list[R]:  # fmt: skip
    """Every job's result, in job order; with ``workers`` > 1 in that many processes of
    ``threads`` torch threads each: this one and ``workers`` − 1 fresh ones, each taking
    the next job in order when it is free (this process starts at once, while the others
    start up and import). ``logs(name)``: the sink of the job's log rows, given every job's
    rows in job order once all are done."""
    if workers <= 1 or len(jobs) <= 1:
        return [fn(context, job, logs(job.name) if logs else None) for job in jobs]
    count = min(workers, len(jobs))
    log.info("training %d models in %d processes (this one and %d started; %d thread(s) each)",
             len(jobs), count, count - 1, threads)  # fmt: skip
    done: dict[int, tuple[R, list[tuple[int, dict[str, float]]]]] = {}
    queue = _Queue(len(jobs))
    errors: list[BaseException] = []
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(count - 1, mp_context=spawn, initializer=_start,
                             initargs=(fn, context, threads)) as pool:  # fmt: skip

        def feed() -> None:  # one thread per started process: its next job, then wait
            try:
                for i in queue.take(first=True):
                    done[i] = pool.submit(_run, jobs[i]).result()
            except BaseException as e:  # re-raised below, in this thread
                errors.append(e)
                queue.stop()

        feeders = [threading.Thread(target=feed, daemon=True) for _ in range(count - 1)]
        for feeder in feeders:
            feeder.start()
        queue.wait_first(count - 1)  # every started process has a job: this one takes the rest
        with _torch_threads(threads):
            _STATE_HERE.update(fn=fn, context=context)
            try:
                for i in queue.take():
                    done[i] = _run(jobs[i], _STATE_HERE)
            except BaseException:
                queue.stop()
                raise
        for feeder in feeders:
            feeder.join()
    if errors:
        raise errors[0]
    for i, job in enumerate(jobs):
        sink = logs(job.name) if logs else None
        for step, values in done[i][1] if sink else ():
            sink(step, values)  # type: ignore[misc]
    return [done[i][0] for i in range(len(jobs))]


class _Queue:
    """Job indices 0..n-1, each taken once, in order, by whichever process is free."""

    def __init__(self, n: int) -> None:
        self._next, self._n, self._lock = 0, n, threading.Lock()
        self._first = threading.Semaphore(0)
        self._stopped = False

    def take(self, first: bool = False) -> Iterator[int]:
        while True:
            with self._lock:
                i, self._next = self._next, self._next + 1
                if i >= self._n or self._stopped:
                    if first:
                        self._first.release()
                    return
            if first:
                self._first.release()
                first = False
            yield i

    def wait_first(self, count: int) -> None:
        for _ in range(count):
            self._first.acquire()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True


_STATE_HERE: dict[str, Any] = {}


@contextlib.contextmanager
def _torch_threads(threads: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def weak_runs(jobs: Sequence[Job], results: Sequence[Result]) -> dict[str, pl.DataFrame]:
    """Each seed folder's EqualizeIR weak runs of its folds, concatenated."""
    parts: Mapping[str, list[pl.DataFrame]] = {}
    for job, result in zip(jobs, results, strict=True):
        if result.weak_run is not None:
            parts.setdefault(job.sub, []).append(result.weak_run)  # type: ignore[attr-defined]
    return {sub: pl.concat(runs) for sub, runs in parts.items()}
