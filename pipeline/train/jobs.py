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
import os
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
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

def _run(fn: JobFn[J, R], context: Any, job: J) -> tuple[R, list[tuple[int, dict[str, float]]]]:
    """``fn(context, job)``: its result and the log rows it wrote."""
    rows: list[tuple[int, dict[str, float]]] = []
    return fn(context, job, lambda step, v: rows.append((step, dict(v)))), rows


def _serve(conn: Connection) -> None:
    """A started process: receives the job function and context, sets up, says it is ready,
    then runs each job it is sent until told to stop; it ends at once if the process that
    started it is gone."""
    parent = multiprocessing.parent_process()
    if parent is not None:  # killed caller: no orphan keeps training and writing
        threading.Thread(target=lambda: (wait([parent.sentinel]), os._exit(1)), daemon=True).start()
    # Ctrl-C reaches every process of the group: the caller says it once (stages.common)
    with contextlib.suppress(EOFError, OSError, KeyboardInterrupt):
        fn, context, threads = conn.recv()
        import torch

        torch.set_num_threads(threads)
        logging.basicConfig(level=logging.WARNING)
        conn.send(None)
        while (job := conn.recv()) is not None:
            try:
                conn.send((True, _run(fn, context, job)))
            except Exception as e:  # the caller raises it
                e.add_note("".join(traceback.format_exception(e)).rstrip())
                try:
                    conn.send((False, e))
                except Exception:  # an error that does not pickle
                    conn.send((False, RuntimeError(f"{type(e).__name__}: {e}")))


class _Helper:
    """One started process and the thread in this one that feeds it jobs once it is ready.
    A helper that is still starting up when every job is taken is stopped, not waited for."""

    def __init__(self, fn: JobFn[J, R], context: Any, threads: int) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.conn, child = spawn.Pipe()
        # the context goes through the pipe, not the process's arguments: spawn writes
        # those before the new process has imported anything and blocks until it reads
        self.proc = spawn.Process(target=_serve, args=(child,))
        self.proc.start()
        child.close()
        self.setup = (fn, context, threads)
        self.lock, self.ready, self.closing = threading.Lock(), False, False

    def feed(self, queue: _Queue, jobs: Sequence[Any], done: dict[int, Any],
             errors: list[BaseException]) -> None:  # fmt: skip
        """Wait until the process is ready, then hand it the next job until none is left."""
        i = -1
        try:
            self.conn.send(self.setup)
            self.conn.recv()
            with self.lock:
                if self.closing:
                    return
                self.ready = True
            for i in queue.take():
                self.conn.send(jobs[i])
                ok, value = self.conn.recv()
                if not ok:  # the job's own error, raised by the caller
                    errors.append(value)
                    queue.stop()
                    return
                done[i] = value
        except (EOFError, OSError) as e:
            if not self.closing:
                what = f"job {jobs[i].name}" if i >= 0 else "its start-up"
                errors.append(RuntimeError(f"a started training process ended during {what} "
                                           f"(exit code {self.proc.exitcode}): {e!r}"))  # fmt: skip
                queue.stop()
        except BaseException as e:  # re-raised by the caller
            errors.append(e)
            queue.stop()

    def close(self, feeder: threading.Thread) -> None:
        """Stop the process if it never became ready; otherwise let it finish its job."""
        with self.lock:
            self.closing = not self.ready
        if self.closing:
            self.proc.terminate()
        feeder.join()
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def run_jobs(
    fn: JobFn[J, R], context: Any, jobs: Sequence[J], workers: int, threads: int,
    logs: Callable[[str], StepSink | None] | None = None,
) -> list[R]:  # fmt: skip
    """Every job's result, in job order; with ``workers`` > 1 in that many processes of
    ``threads`` torch threads each: this one and ``workers`` − 1 fresh ones, each taking
    the next job in order when it is free. This process starts at once; a started process
    takes jobs once it has imported and set up, and one still starting up when no job is
    left is stopped (so a few short jobs never wait for a start-up). ``logs(name)``: the
    sink of the job's log rows, given every job's rows in job order once all are done."""
    if workers <= 1 or len(jobs) <= 1:
        return [fn(context, job, logs(job.name) if logs else None) for job in jobs]
    count = min(workers, len(jobs))
    log.info("%d jobs in %d processes (this one and %d started; %d thread(s) each)",
             len(jobs), count, count - 1, threads)  # fmt: skip
    done: dict[int, tuple[R, list[tuple[int, dict[str, float]]]]] = {}
    queue = _Queue(len(jobs))
    errors: list[BaseException] = []
    helpers = [_Helper(fn, context, threads) for _ in range(count - 1)]
    feeders = [threading.Thread(target=h.feed, args=(queue, jobs, done, errors), daemon=True)
               for h in helpers]  # fmt: skip
    for feeder in feeders:
        feeder.start()
    try:
        with _torch_threads(threads):
            for i in queue.take():
                done[i] = _run(fn, context, jobs[i])
    except BaseException:
        queue.stop()
        for h in helpers:
            h.proc.kill()
        raise
    finally:
        for h, feeder in zip(helpers, feeders, strict=True):
            h.close(feeder)
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
        self._stopped = False

    def take(self) -> Iterator[int]:
        while True:
            with self._lock:
                i, self._next = self._next, self._next + 1
                if i >= self._n or self._stopped:
                    return
            yield i

    def stop(self) -> None:
        with self._lock:
            self._stopped = True


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
