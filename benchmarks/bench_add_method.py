"""Wall time of adding a method to the reproduced default: one new loss file and one new
`methods:` entry, `python -m pipeline.deps --write`, then `dvc repro` (issue 34).

Runs in a throwaway clone of this repository at HEAD that uses this repository's DVC cache
(so the default's outputs are checked out, not recomputed; run it after `dvc repro` has
filled the cache): the clone gains `pipeline/train/losses/double_margin.py` (twice the
margin loss, the same throwaway plug-in as tests/stages/test_ordering_plugin.py) and a
method `double_margin` that uses it. It records the stages `dvc repro` ran and their wall
time, and, as the naive way, what the same change cost when every `train@` stage depended
on the whole `pipeline/train` folder: every method's training and evaluation, taken from the
per-stage seconds of the latest `bench_repro` row (`results/repro.jsonl`, the same machine),
so the ratio is of measured stage times, not of a second run. The clone is removed after.

    python -m benchmarks.bench_add_method       # from the repository root, ~2 min
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import RESULTS, parser, setup_logging, write_row

LOSS = '''"""`double_margin`: twice the margin loss (a throwaway benchmark plug-in)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pipeline.config import NoConfig
from pipeline.train.losses._pairwise import hinge
from pipeline.train.losses.common import Loss

if TYPE_CHECKING:
    from torch import Tensor


def loss(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], cfg: NoConfig) -> Tensor:
    """``2 × mean(max(0, 1 − tanh s⁺ + tanh s⁻))``. Paper: none (a benchmark plug-in)."""
    return 2.0 * hinge(s_pos, s_neg, 0.0, 0.0, 1.0)


RECORD = Loss("double_margin", NoConfig, fn=loss)
'''
METHOD = {"ordering": "shuffle", "psi": "bool_abs", "loss": ["double_margin"]}
STAGE = re.compile(r"Running stage '([^']+)'")


def _run(cmd: list[str], cwd: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout + proc.stderr


def naive_seconds() -> tuple[float | None, int]:
    """Seconds of every ``train@``/``evaluate@`` stage and the report in the latest
    ``bench_repro`` row: what adding a loss file cost with folder deps (all methods rerun)."""
    path = RESULTS / "repro.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    per_stage: dict[str, Any] = rows[-1].get("per_stage_s", {}) if rows else {}
    keep = [s for s in per_stage if s.split("@")[0] in ("train", "evaluate") or s == "report"]
    total = sum(float(per_stage[s]) for s in keep) if keep else None
    return total, len(keep)


def main() -> None:
    ns = parser(__doc__ or "").parse_args()
    setup_logging()
    src = Path.cwd().resolve()
    py = [sys.executable, "-m"]
    with tempfile.TemporaryDirectory(prefix="bench-add-method-") as tmp:
        repo = Path(tmp) / "repo"
        _run(["git", "clone", "-q", str(src), str(repo)], Path(tmp))
        _run([*py, "dvc", "cache", "dir", "--local", str(src / ".dvc" / "cache")], repo)
        _run([*py, "dvc", "checkout", "-q"], repo)
        status = _run([*py, "dvc", "status"], repo)
        (repo / "pipeline/train/losses/double_margin.py").write_text(LOSS)
        params = yaml.safe_load((repo / "params.yaml").read_text())
        params["methods"]["double_margin"] = METHOD
        (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        start = time.perf_counter()
        _run([*py, "pipeline.deps", "--write"], repo)
        out = _run([*py, "dvc", "repro"], repo)
        seconds = time.perf_counter() - start
        shutil.rmtree(repo, ignore_errors=True)
    ran = STAGE.findall(out)
    naive, n_naive = naive_seconds()
    row = {"seconds": round(seconds, 1), "stages_run": ran, "clean_before": "up to date" in status,
           "naive_seconds": naive, "naive_stages": n_naive,
           "speedup": round(naive / seconds, 1) if naive else None}  # fmt: skip
    write_row("add_method", row, ns.out)


if __name__ == "__main__":
    main()
