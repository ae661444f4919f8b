"""Fold models trained in worker processes give what one process gives (pipeline.train.jobs);
the calling process is one of the workers and starts at once; a started process that is not
ready when every job is taken is stopped, not waited for; a failing job's error reaches the
caller."""

from __future__ import annotations

import os
import time
from pathlib import Path

import polars as pl
import pytest

from pipeline.train.jobs import Job, Result, run_jobs, weak_runs


def _job_fn(context: dict[str, float], job: Job, log: object) -> Result:
    """A stand-in for training: a curve from the job's data; logs two rows; records its pid."""
    value = context["scale"] * job.seed + job.fold + job.triples.height
    if log is not None:
        for step in (1, 2):
            log(step, {"loss": value / step})  # type: ignore[operator]
    curve = pl.DataFrame({"step": [1, 2], "loss": [value, value / 2], "lr": [0.1, 0.0],
                          "pid": [float(os.getpid())] * 2})  # fmt: skip
    weak = None if job.test is None else job.test.with_columns(pl.lit(value).alias("score"))
    return Result(curve, weak)


def _jobs() -> list[Job]:
    triples = pl.DataFrame({"query_id": ["q"] * 3})
    test = pl.DataFrame({"query_id": ["t"], "doc_id": ["d"]})
    return [Job(seed, f"seed-{seed}", fold, triples.head(fold + 1), test)
            for seed in (1, 2) for fold in (0, 1, 2)]  # fmt: skip


def _waiting_fn(context: dict[str, float], job: Job, log: object) -> Result:
    """``_job_fn``; in the calling process, every job after the first waits (up to 60 s)
    until the started process has run one, so that it certainly gets one."""
    marker = Path(str(context["marker"]))
    if os.getpid() != context["caller"]:
        marker.touch()
    elif job.seed != 1 or job.fold != 0:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return _job_fn(context, job, log)


def test_workers_give_the_same_results_in_job_order(tmp_path: Path) -> None:
    logged: dict[str, dict[int, list[tuple[int, dict[str, float]]]]] = {}

    def logs(n: int):  # type: ignore[no-untyped-def]
        def sink_for(name: str):  # type: ignore[no-untyped-def]
            return lambda step, v: logged.setdefault(name, {}).setdefault(n, []).append((step, v))

        return sink_for

    jobs = _jobs()
    context = {"scale": 10.0, "caller": os.getpid(), "marker": str(tmp_path / "ran")}
    one = run_jobs(_job_fn, context, jobs, workers=1, threads=1, logs=logs(1))
    two = run_jobs(_waiting_fn, context, jobs, workers=2, threads=1, logs=logs(2))
    for a, b in zip(one, two, strict=True):
        assert a.curve.drop("pid").equals(b.curve.drop("pid"))
        assert a.weak_run is not None and b.weak_run is not None and a.weak_run.equals(b.weak_run)
    assert {r.curve["pid"][0] for r in one} == {float(os.getpid())}
    pids = [r.curve["pid"][0] for r in two]  # this process took the first job at once;
    assert pids[0] == float(os.getpid())  # the started one took one once it was ready
    assert len(set(pids) - {float(os.getpid())}) == 1
    assert set(logged) == {j.name for j in jobs} == {f"seed-{s}/fold-{f}" for s in (1, 2)
                                                     for f in (0, 1, 2)}  # fmt: skip
    for rows in logged.values():
        assert rows[1] == rows[2]  # the replayed rows equal the live ones
    runs = weak_runs(jobs, two)
    assert set(runs) == {"seed-1", "seed-2"} and runs["seed-1"].height == 3


def _failing_fn(context: dict[str, float], job: Job, log: object) -> Result:
    if job.fold == 1:
        raise ValueError(f"bad fold {job.fold} of seed {job.seed}")
    return _job_fn(context, job, log)


def test_a_failing_job_raises_its_error_in_the_caller() -> None:
    """Whichever process runs the failing job (this one or the started one), its error is
    raised here, and no job is left running."""
    with pytest.raises(ValueError, match="bad fold 1 of seed"):
        run_jobs(_failing_fn, {"scale": 1.0}, _jobs(), workers=2, threads=1)


class _SlowToStart(dict):  # type: ignore[type-arg]
    """A job context whose unpickling in a started process takes 30 s (a slow start-up)."""

    def __setstate__(self, state: dict[str, object]) -> None:
        if os.getpid() != state["caller"]:
            time.sleep(30)
        self.update(state)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_SlowToStart, (), dict(self))


def test_quick_jobs_do_not_wait_for_a_start_up() -> None:
    """Jobs that are done before the started process is ready are all done here; that
    process is stopped rather than waited for, and none is left behind."""
    import multiprocessing

    context = _SlowToStart(scale=1.0, caller=os.getpid())
    start = time.monotonic()
    results = run_jobs(_job_fn, context, _jobs(), workers=2, threads=1)
    assert {r.curve["pid"][0] for r in results} == {float(os.getpid())}
    assert time.monotonic() - start < 20  # not the 30 s the started process needs
    assert not multiprocessing.active_children()
