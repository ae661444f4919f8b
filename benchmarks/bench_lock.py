"""What DVC's bookkeeping costs the default: dvc.lock's size at two commits and DVC's own
seconds (``dvc_s``: hashing, the cache, rewriting dvc.lock after every stage) of the two
``bench_repro --empty-cache`` runs made at them (issue 42: whole params sections as deps made
dvc.lock 12,092 lines, and DVC rewrites it after each of the 112 stages).

    python -m benchmarks.bench_lock BEFORE_REV AFTER_REV   # from the repository root

``BEFORE_REV``/``AFTER_REV``: the commits whose dvc.lock each empty-cache run wrote; the runs
are the last two ``empty cache`` rows of ``benchmarks/results/repro.jsonl`` (before, after).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

from benchmarks.common import RESULTS, setup_logging, write_row


def lock_lines(rev: str) -> int:
    """Lines of dvc.lock at ``rev``."""
    text = subprocess.run(["git", "show", f"{rev}:dvc.lock"], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    return len(text.splitlines())


def _rev(rev: str) -> str:
    return subprocess.run(["git", "rev-parse", "--short", rev], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    setup_logging()
    before, after = (_rev(r) for r in (argv if argv is not None else sys.argv[1:])[:2])
    rows = [json.loads(line) for line in (RESULTS / "repro.jsonl").read_text().splitlines()]
    runs = [r for r in rows if r.get("mode") == "empty cache"][-2:]
    row = {
        "before": before, "after": after,
        "lock_lines": [lock_lines(before), lock_lines(after)],
        "dvc_s": [runs[0]["dvc_s"], runs[1]["dvc_s"]],
        "total_s": [runs[0]["total_s"], runs[1]["total_s"]],
        "runs": [runs[0]["date"], runs[1]["date"]],
    }  # fmt: skip
    write_row("lock", row, None)


if __name__ == "__main__":
    main()
