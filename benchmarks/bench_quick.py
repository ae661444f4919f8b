"""Wall time of the README's quick profile in a fresh clone (empty DVC cache).

Builds a throw-away git + DVC repository of this working tree (all default params and
methods), reads the quick-profile command from README.md (the `dvc exp run` line between
`<!-- quick:start -->` and `<!-- quick:end -->`) and times it end to end, DVC's own
bookkeeping and the start-up of every stage included, under `nice -n 10`. One run (it trains real
all-MiniLM-L6-v2 models); the JSON row lists the stages that ran.

    python -m benchmarks.bench_quick
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_storage import ROOT, make_repo, run
from benchmarks.common import parser, setup_logging, write_row

STAGE = re.compile(r"Running stage '([^']+)'")


def quick_command(readme: Path = ROOT / "README.md") -> list[str]:
    """The quick profile's `dvc exp run …` command from the README, as arguments."""
    text = readme.read_text(encoding="utf-8")
    block = text.split("<!-- quick:start -->", 1)[1].split("<!-- quick:end -->", 1)[0]
    code = block.split("```bash", 1)[1].split("```", 1)[0]
    line = " ".join(part.strip().rstrip("\\") for part in code.strip().splitlines()
                    if not part.strip().startswith("#"))  # fmt: skip
    first = line.split(" && ")[0]
    args = shlex.split(first)
    if args[:3] != ["dvc", "exp", "run"]:
        raise ValueError(f"README quick profile: expected a `dvc exp run` line, got {first!r}")
    return args


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--work", type=Path, default=None, help="folder for the repository")
    args = p.parse_args()
    setup_logging()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-quick-"))
    repo = make_repo(work / "repo", None)
    cmd = [sys.executable, "-m", *quick_command()]
    start = time.perf_counter()
    proc = run(cmd, repo)
    seconds = time.perf_counter() - start
    stages = STAGE.findall(proc.stdout)
    row = {"command": shlex.join(cmd[2:]), "wall_s": round(seconds, 1), "stages": stages}
    print(row, flush=True)
    write_row("quick", row, args.out)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
