"""Where one method's train and evaluate stages spend their time, phase by phase.

In a repository whose data stages can run (it first runs ``dvc repro features transfer_data
order@<method>``, cached after the first time), each of ``--repeats`` rounds times:

1. the interpreter's start-up (``python -c pass``) and each stage module's imports
   (``python -c "import stages.train"``), wall and CPU seconds;
2. each stage's command as DVC runs it (``python -m stages.train <method>``, then
   ``python -m stages.evaluate <method>``): wall and CPU seconds of the whole process tree
   (its worker processes included) and the seconds by phase the stage logs
   (``pipeline.timing``): in the stage's own process (start-up, inputs, DVCLive, jobs,
   writing; evaluate: inputs, metrics, weak and transfer metrics) and, for ``train``,
   summed over its (seed, fold) models in the worker processes (model load, groups,
   training steps, save, reload, rerank, rerank transfer);
3. with ``--dvc``: the same stages under ``dvc repro --force --single-item``; the extra
   wall time over the bare command is DVC's own bookkeeping for one stage (hashing the
   dependencies and outputs, the cache, ``dvc.lock``).

It rewrites the method's outputs (models/, runs/, eval/, dvclive/, metrics/<method>.json)
with the same bytes (training is deterministic on a CPU). One JSON row: medians of every
number, the load average before and after (a busy machine inflates wall times, CPU seconds
much less) and the machine.

    python -m benchmarks.bench_train_phases [--method baseline] [--repeats 3] [--dvc]
"""

from __future__ import annotations

import logging
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.common import parser, setup_logging, write_row
from pipeline.timing import PREFIX, parse_line

log = logging.getLogger("benchmarks")


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def timed_run(cmd: Sequence[str]) -> tuple[float, float, str]:
    """``(wall s, CPU s of the process tree, stderr + stdout)`` of ``cmd``; fails loudly."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIPELINE_LOG="INFO")
    env["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}"
    cpu, start = _cpu(), time.perf_counter()
    proc = subprocess.run(list(cmd), env=env, text=True, capture_output=True, check=False)
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}{proc.stdout[-2000:]}")
    return wall, cpu, proc.stderr + proc.stdout


def phase_lines(output: str) -> dict[str, dict[str, float]]:
    """Every phase line of a stage's log: its label (``train@m``, ``train@m jobs …``) →
    phase → seconds."""
    out: dict[str, dict[str, float]] = {}
    for line in output.splitlines():
        if PREFIX in line:
            label = line.split(PREFIX, 1)[0].rsplit(": ", 1)[-1].strip()
            out[label] = parse_line(line)
    return out


def medians(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Key-wise median of numbers (recursively for dicts) over ``rows``."""
    out: dict[str, Any] = {}
    for key, first in rows[0].items():
        values = [r[key] for r in rows if key in r]
        if isinstance(first, dict):
            out[key] = medians(values)
        else:
            out[key] = round(statistics.median(values), 2)
    return out


def one_round(method: str, with_dvc: bool) -> dict[str, Any]:
    py = sys.executable
    row: dict[str, Any] = {}
    wall, cpu, _ = timed_run([py, "-c", "pass"])
    row["python -c pass"] = {"wall_s": wall, "cpu_s": cpu}
    for module in ("stages.train", "stages.evaluate"):
        wall, cpu, _ = timed_run([py, "-c", f"import {module}"])
        row[f"import {module}"] = {"wall_s": wall, "cpu_s": cpu}
    for stage in ("train", "evaluate"):
        wall, cpu, output = timed_run([py, "-m", f"stages.{stage}", method])
        row[f"{stage}@{method}"] = {"wall_s": wall, "cpu_s": cpu, **phase_lines(output)}
        if with_dvc:
            cmd = [py, "-m", "dvc", "repro", "--force", "--single-item", f"{stage}@{method}"]
            wall, cpu, _ = timed_run(cmd)
            row[f"dvc repro {stage}@{method}"] = {"wall_s": wall, "cpu_s": cpu}
    return row


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--method", default="baseline", help="the method (default baseline)")
    p.add_argument("--dvc", action="store_true", help="also time the stages under dvc repro")
    p.add_argument("--skip-deps", action="store_true", help="the inputs are there: no dvc repro")
    args = p.parse_args()
    setup_logging()
    if not args.skip_deps:
        deps = ["features", "transfer_data", f"order@{args.method}"]
        timed_run([sys.executable, "-m", "dvc", "repro", *deps])
    load_before = os.getloadavg()
    rounds = []
    for i in range(args.repeats):
        rounds.append(one_round(args.method, args.dvc))
        log.info("round %d: %s", i + 1, rounds[-1])
    row = {
        "method": args.method,
        "repeats": args.repeats,
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        **medians(rounds),
    }
    write_row("train_phases", row, args.out)


if __name__ == "__main__":
    main()
