"""Wall time of the default ``dvc repro`` with a per-stage breakdown.

Runs ``dvc repro --force`` (every stage executes) in the current repository, timestamps each
``Running stage`` line DVC prints, and writes one JSON row with the total and the seconds of
every stage (a stage lasts until the next one starts). ``--empty-cache`` measures the README's
first command as a new user meets it: the DVC cache is moved aside (to
``.dvc/tmp/cache.before-bench-<time>``, ignored by git; restore it by hand if wanted) and
every output removed, then a plain ``dvc repro`` runs. It takes about 25 minutes on the
2-core reference machine, so it runs once, not three times.

    python -m benchmarks.bench_repro [--empty-cache]   # from the repository root
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.common import parser, setup_logging, write_row

STAGE = re.compile(r"Running stage '([^']+)'")
OUTPUTS = ("data", "models", "runs", "eval", "checkpoints")
"""Folders that hold the pipeline's cached outputs (removed by ``--empty-cache``)."""


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
    start = time.perf_counter()
    marks: list[tuple[str, float]] = []
    cmd = [sys.executable, "-m", "dvc", "repro", *([] if args.empty_cache else ["--force"])]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            match = STAGE.search(line)
            if match:
                marks.append((match.group(1), time.perf_counter()))
    total = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"dvc repro failed with exit code {proc.returncode}")
    ends = [t for _, t in marks[1:]] + [start + total]
    per_stage = {name: round(end - t, 2) for (name, t), end in zip(marks, ends, strict=True)}
    families: dict[str, float] = defaultdict(float)
    for name, seconds in per_stage.items():
        families[name.split("@")[0]] += seconds
    row = {
        "mode": "empty cache" if args.empty_cache else "--force",
        "total_s": round(total, 1),
        "stages": len(per_stage),
        "by_family_s": {k: round(v, 1) for k, v in sorted(families.items(), key=lambda kv: -kv[1])},
        "per_stage_s": per_stage,
    }
    write_row("repro", row, args.out)


if __name__ == "__main__":
    main()
