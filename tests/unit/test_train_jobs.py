"""Fold models trained in worker processes give what one process gives (pipeline.train.jobs);
the calling process is one of the workers; a failing job's error reaches the caller."""

from __future__ import annotations

import os

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


def test_workers_give_the_same_results_in_job_order() -> None:
    logged: dict[str, dict[int, list[tuple[int, dict[str, float]]]]] = {}

    def logs(n: int):  # type: ignore[no-untyped-def]
        def sink_for(name: str):  # type: ignore[no-untyped-def]
            return lambda step, v: logged.setdefault(name, {}).setdefault(n, []).append((step, v))

        return sink_for

    jobs = _jobs()
    one = run_jobs(_job_fn, {"scale": 10.0}, jobs, workers=1, threads=1, logs=logs(1))
    two = run_jobs(_job_fn, {"scale": 10.0}, jobs, workers=2, threads=1, logs=logs(2))
    for a, b in zip(one, two, strict=True):
        assert a.curve.drop("pid").equals(b.curve.drop("pid"))
        assert a.weak_run is not None and b.weak_run is not None and a.weak_run.equals(b.weak_run)
    assert {r.curve["pid"][0] for r in one} == {float(os.getpid())}
    pids = {r.curve["pid"][0] for r in two}  # the started process runs one job at least;
    assert len(pids - {float(os.getpid())}) == 1  # this one the rest, once it is ready
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
