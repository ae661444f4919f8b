"""Wall time of the default ``dvc repro`` with a per-stage breakdown.

Runs ``dvc repro --force`` (every stage executes, as from an empty cache) in the current
repository, timestamps each ``Running stage`` line DVC prints, and writes one JSON row with
the total and the seconds of every stage (a stage lasts until the next one starts). It takes
about 25 minutes on the 2-core reference machine, so it runs once, not three times.

    python -m benchmarks.bench_repro            # from the repository root
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import defaultdict

from benchmarks.common import parser, setup_logging, write_row

STAGE = re.compile(r"Running stage '([^']+)'")


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    setup_logging()
    start = time.perf_counter()
    marks: list[tuple[str, float]] = []
    cmd = [sys.executable, "-m", "dvc", "repro", "--force"]
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
        "total_s": round(total, 1),
        "stages": len(per_stage),
        "by_family_s": {k: round(v, 1) for k, v in sorted(families.items(), key=lambda kv: -kv[1])},
        "per_stage_s": per_stage,
    }
    write_row("repro", row, args.out)


if __name__ == "__main__":
    main()
