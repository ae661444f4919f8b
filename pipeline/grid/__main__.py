"""`python -m pipeline.grid submit|status|collect GRID`: the grid on a SLURM cluster.

GRID is a grid file (YAML, `pipeline/grid/spec.py`); `--method`, `--seed`, `-S` and
`--name` replace or extend it (or stand alone, without a file). Give `status` and `collect`
the same grid as `submit`. `_run` is what the job scripts call on the compute nodes.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import is_expected
from pipeline.grid import runner, spec, workspace

log = logging.getLogger("pipeline.grid")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pipeline.grid", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = ap.add_subparsers(dest="command", required=True)
    helps = {
        "submit": "submit what is neither done nor queued nor running (again: reruns the "
        "failed, timed-out, preempted, cancelled and missing experiments)",
        "status": "each experiment's state, SLURM job and log",
        "collect": "pull the done experiments (`dvc exp pull`): then `dvc exp show`",
    }
    for name, text in helps.items():
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("grid", nargs="?", type=Path, help="grid file (YAML)")
        p.add_argument("--method", action="append", default=[], help="a method (repeatable)")
        p.add_argument("--seed", action="append", type=int, default=[], help="a seed (repeatable)")
        p.add_argument("-S", "--set-param", dest="sets", action="append", default=[],
                       help="a `dvc exp run -S` override; `k=a,b` sweeps (repeatable)")  # fmt: skip
        p.add_argument("--name", help="the grid's name (replaces the file's)")
        p.add_argument("--repo", type=Path, default=Path("."), help="the repository (default .)")
        if name == "submit":
            p.add_argument("--dry-run", action="store_true", help="show, submit nothing")
    run = sub.add_parser("_run", help=argparse.SUPPRESS)
    run.add_argument("submission", type=Path)
    run.add_argument("kind", choices=["prepare", "task"])
    run.add_argument("index", nargs="?", type=int)
    return ap


def _table(rows: Sequence[runner.Row]) -> str:
    width = max(len(r.name) for r in rows)
    lines = [f"{'experiment':<{width}}  {'state':<13} {'SLURM job':<12} {'SLURM state':<13} log"]
    lines += [f"{r.name:<{width}}  {r.state:<13} {r.job or '-':<12} {r.slurm_state or '-':<13} "
              f"{r.log or '-'}" for r in rows]  # fmt: skip
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.state] = counts.get(r.state, 0) + 1
    lines.append(", ".join(f"{n} {state}" for state, n in sorted(counts.items())))
    return "\n".join(lines) + "\n"


def _main(ns: argparse.Namespace) -> int:
    if ns.command == "_run":
        sent = workspace.Submission.read(ns.submission)
        if ns.kind == "prepare":
            workspace.prepare(sent)
        else:
            workspace.run_task(sent, ns.index)
        return 0
    grid = spec.load(ns.grid, ns.method, ns.seed, ns.sets, ns.name)
    root = ns.repo.resolve()
    if ns.command == "submit":
        sub = runner.submit(root, grid, dry_run=ns.dry_run)
        if sub is not None and not ns.dry_run:
            log.info("data job %s, array %s (%d tasks); `python -m pipeline.grid status` "
                     "follows them", sub.jobs["prepare"], sub.jobs["array"],
                     len(sub.experiments))  # fmt: skip
        return 0
    rows = runner.status(root, grid) if ns.command == "status" else runner.collect(root, grid)
    sys.stdout.write(_table(rows))
    job = runner.data_job(root, grid) if ns.command == "status" else None
    if job is not None:
        sys.stdout.write(f"data job {job.job}: {job.state} ({job.slurm_state or 'no record'}"
                         f"), log {job.log}\n")  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=os.environ.get("PIPELINE_LOG", "INFO"), format=fmt, stream=sys.stderr)
    try:
        return _main(ns)
    except Exception as e:
        if not is_expected(e):
            raise
        log.error("%s", e)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
