"""A full disk in a real stage process: one ERROR line naming the file being written and the
space it needs, no traceback, exit 1, and the stage's earlier outputs untouched (no
temporary file left). The fault is injected into the library's writer (tests/robustness/
faults: the write fails with ENOSPC, as on a full disk); tests/unit/test_disk_full.py checks
each writer in-process.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.robustness.faulty import env

pytestmark = pytest.mark.slow

CASES = {  # stage → (its command, fault, the file named, outputs that must stay as they were)
    "score": (("stages.score",), "pyarrow.parquet:write_table:enospc",
              "data/doc_scores.parquet", ("data",)),
    "features": (("stages.features",), "pipeline.models.features:save_file:safetensors",
                 "data/features.safetensors", ("data",)),
    "train": (("stages.train", "baseline"), "transformers.modeling_utils:safe_save_file:"
              "safetensors", "models/baseline/fold-0", ("models", "runs", "plots")),
    "evaluate": (("stages.evaluate", "baseline"), "pyarrow.parquet:write_table:enospc",
                 "eval/baseline/", ("eval", "metrics")),
}  # fmt: skip


def _files(repo: Path, folders: tuple[str, ...]) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes()
            for f in folders for p in sorted((repo / f).rglob("*")) if p.is_file()}  # fmt: skip


@pytest.fixture(scope="module")
def full_repo(tiny_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("full") / "repo"
    shutil.copytree(tiny_repo, repo, symlinks=True)
    return repo


@pytest.mark.parametrize("stage", list(CASES))
def test_enospc_in_a_stage_is_one_line_and_leaves_its_outputs(full_repo: Path, stage: str) -> None:
    command, fault, named, kept = CASES[stage]
    before = _files(full_repo, kept)
    proc = subprocess.run([sys.executable, "-m", *command], cwd=full_repo, env=env(fault),
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    errors = [line for line in proc.stderr.splitlines() if " ERROR " in line]
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr[-3000:]
    assert re.search(
        rf"ERROR stages: {re.escape(named)}\S*: no space left on device while writing it \(it "
        r"needs about \d+(\.\d)? (B|KiB|MiB|GiB), .* free in .*\); nothing was written",
        errors[0],
    ), errors[0]
    assert _files(full_repo, kept) == before  # nothing half-written, no temporary file
    sys.stdout.write(f"\n{stage}: {errors[0]}\n")
