"""Wall time of the default ``dvc repro`` with a per-stage breakdown.

Runs ``dvc repro --force`` (every stage executes) in the current repository, timestamps each
line DVC prints, and writes one JSON row with the total and the seconds of every stage (a
stage lasts until the next one starts; a stage DVC restores from its cache, ``Stage '…' is
cached``, is listed as ``<stage> (cached)``). Each stage's seconds are split into its
command's (from the ``> cmd`` line to the command's last output line) and DVC's own
bookkeeping around it (hashing dependencies and outputs, the cache, ``dvc.lock``, the
interpreter's exit). The row also has the CPU seconds of the whole run (every process, DVC
included: on a busy machine wall times grow, CPU seconds much less) and the load average
before and after. ``--empty-cache`` measures the README's first command as a new user meets
it: the DVC cache is moved aside (to ``.dvc/tmp/cache.before-bench-<time>``, ignored by git;
restore it by hand if wanted) and every output removed, then a plain ``dvc repro`` runs. It
takes about 25 minutes on the 2-core reference machine, so it runs once, not three times.

    python -m benchmarks.bench_repro [--empty-cache]   # from the repository root
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import parser, setup_logging, write_row

STAGE = re.compile(r"Running stage '([^']+)'")
CACHED = re.compile(r"Stage '([^']+)' is cached")
DVC_LINE = re.compile(r"^(Running stage |Stage '|Updating lock file|> |Use `dvc push`|To track)")
OUTPUTS = ("data", "models", "runs", "eval", "checkpoints")
"""Folders that hold the pipeline's cached outputs (removed by ``--empty-cache``)."""


def split_stages(lines: list[tuple[float, str]], end: float) -> dict[str, dict[str, float]]:
    """Per stage, from ``(arrival time, line)`` of DVC's output: ``total`` seconds (until the
    next stage starts, or ``end``), ``command`` (its ``> cmd`` line to its last output line)
    and ``dvc`` (the rest)."""
    marks: list[tuple[str, float, int]] = []
    for i, (t, line) in enumerate(lines):
        if m := STAGE.search(line):
            marks.append((m.group(1), t, i))
        elif m := CACHED.search(line):
            marks.append((f"{m.group(1)} (cached)", t, i))
    out: dict[str, dict[str, float]] = {}
    for k, (name, t, i) in enumerate(marks):
        stop_i = marks[k + 1][2] if k + 1 < len(marks) else len(lines)
        stop_t = marks[k + 1][1] if k + 1 < len(marks) else end
        body = lines[i + 1 : stop_i]
        cmd_at = next((t2 for t2, ln in body if ln.startswith("> ")), None)
        last = max((t2 for t2, ln in body if ln.strip() and not DVC_LINE.match(ln)), default=None)
        command = (last - cmd_at) if cmd_at is not None and last is not None else 0.0
        total = stop_t - t
        out[name] = {"total": round(total, 2), "command": round(command, 2),
                     "dvc": round(total - command, 2)}  # fmt: skip
    return out


def empty_cache() -> None:
    """Move the DVC cache aside and remove the outputs: the next ``dvc repro`` starts cold."""
    cache = Path(".dvc/cache")
    if cache.exists():
        Path(".dvc/tmp").mkdir(exist_ok=True)
        cache.rename(Path(f".dvc/tmp/cache.before-bench-{int(time.time())}"))
    for folder in OUTPUTS:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--empty-cache", action="store_true", help="cold start: see the docstring")
    args = p.parse_args()
    setup_logging()
    if args.empty_cache:
        empty_cache()
    load_before = os.getloadavg()[0]
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = use.ru_utime + use.ru_stime
    start = time.perf_counter()
    lines: list[tuple[float, str]] = []
    cmd = [sys.executable, "-m", "dvc", "repro", *([] if args.empty_cache else ["--force"])]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append((time.perf_counter(), line))
    end = time.perf_counter()
    total = end - start
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = use.ru_utime + use.ru_stime - cpu
    if proc.returncode != 0:
        raise SystemExit(f"dvc repro failed with exit code {proc.returncode}")
    stages = split_stages(lines, end)
    families: dict[str, float] = defaultdict(float)
    for name, seconds in stages.items():
        families[name.split("@")[0].split(" ")[0]] += seconds["total"]
    row: dict[str, Any] = {
        "mode": "empty cache" if args.empty_cache else "--force",
        "total_s": round(total, 1),
        "cpu_s": round(cpu, 1),
        "load_average_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "stages": len(stages),
        "command_s": round(sum(s["command"] for s in stages.values()), 1),
        "dvc_s": round(sum(s["dvc"] for s in stages.values()), 1),
        "by_family_s": {k: round(v, 1) for k, v in sorted(families.items(), key=lambda kv: -kv[1])},
        "per_stage_s": {name: s["total"] for name, s in stages.items()},
        "per_stage_split_s": stages,
    }
    write_row("repro", row, args.out)


if __name__ == "__main__":
    main()
