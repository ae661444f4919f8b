"""A writer killed with SIGKILL mid-write never leaves a truncated artifact.

`pipeline.io` writes to a hidden temporary file next to the destination (`.<name>.<random>…
.tmp`) and renames it into place. A SIGKILLed process cannot run any clean-up, so its
temporary file stays behind: it is hidden (leading dot), never matches the artifact's name,
and DVC does not track it (file outputs are tracked by exact path; a directory output is
deleted by DVC before its stage reruns). The destination holds the old artifact or none.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest

from pipeline import io, schemas

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

BIG_PARQUET = """
import sys
import polars as pl
from pipeline import io, schemas

i = pl.col("i")
run = pl.select(i=pl.int_range(int(sys.argv[2]))).select(
    query_id=pl.format("q{}", i // 100),
    doc_id=pl.format("doc-{}-{}", i, (i * 2654435761) % 1000003),
    score=(i * 7919 % 10007).cast(pl.Float64),
    rank=i % 100 + 1,
)
print("writing", flush=True)
io.write_table(run, sys.argv[1], schemas.RUN)
"""

KILL_BEFORE_RENAME = """
import os, signal, sys
from pipeline import io

def die(src, dst):  # the temporary file is complete; the rename never happens
    os.kill(os.getpid(), signal.SIGKILL)

io.os.replace = die
io.write_json({"values": list(range(200_000))}, sys.argv[1])
"""


def _child(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _old_run() -> pl.DataFrame:
    return pl.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0], "rank": [1]})


def _temps(folder: Path, name: str) -> list[Path]:
    return sorted(folder.glob(f".{name}.*.tmp"))


def _kill_when_temp_grows(proc: subprocess.Popen[str], folder: Path, name: str) -> None:
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip() == "writing", proc.stderr.read()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any(t.stat().st_size > 0 for t in _temps(folder, name) if t.exists()):
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.002)
    assert proc.wait(timeout=60) == -signal.SIGKILL, "the write finished before the kill"


@pytest.mark.parametrize("old", [True, False], ids=["old-artifact", "no-artifact"])
def test_sigkill_mid_parquet_write(tmp_path: Path, old: bool) -> None:
    dest = tmp_path / "run.parquet"
    if old:
        io.write_table(_old_run(), dest, schemas.RUN)
        before = dest.read_bytes()
    proc = _child(BIG_PARQUET, str(dest), "2000000")
    _kill_when_temp_grows(proc, tmp_path, dest.name)
    if old:
        assert dest.read_bytes() == before
        assert io.read_table(dest, schemas.RUN).equals(_old_run())
    else:
        assert not dest.exists()
    # what the killed writer left: one hidden, partial temporary file, never the artifact
    leftovers = [p.name for p in tmp_path.iterdir() if p != dest]
    assert len(leftovers) == 1 and leftovers[0].startswith(".run.parquet.")
    assert leftovers[0].endswith(".tmp") and sorted(tmp_path.glob("*.parquet")) == (
        [dest] if old else []
    )
    with pytest.raises(io.ArtifactError, match="not a readable Parquet file"):
        io.read_table(tmp_path / leftovers[0], schemas.RUN)


def test_sigkill_before_rename_keeps_old_json(tmp_path: Path) -> None:
    dest = tmp_path / "metrics.json"
    io.write_json({"MRR@10": 0.5}, dest)
    proc = _child(KILL_BEFORE_RENAME, str(dest))
    assert proc.wait(timeout=120) == -signal.SIGKILL
    assert io.read_json(dest) == {"MRR@10": 0.5}
    (temp,) = _temps(tmp_path, dest.name)  # complete, but never renamed into place
    assert io.read_json(temp)["values"][-1] == 199_999
    # the next successful write replaces the artifact; a dead writer's temp file (if it
    # is not cleaned up) stays hidden and is never read as the artifact
    io.write_json({"MRR@10": 0.75}, dest)
    assert io.read_json(dest) == {"MRR@10": 0.75}
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == [dest.name]
