"""Build products inside the code folders that stages depend on (``pipeline/``, ``stages/``)
are outside DVC's hashes: a machine that writes ``__pycache__`` (no PYTHONDONTWRITEBYTECODE)
or compiles the BM25 kernel (numba's cache) must not see every stage as changed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "path",
    [
        "pipeline/retrieval/__pycache__/bm25.cpython-311.pyc",
        "pipeline/retrieval/__pycache__/bm25._query_top_k-43.py311.nbi",
        "pipeline/retrieval/__pycache__/bm25._query_top_k-43.py311.1.nbc",
        "stages/__pycache__/train.cpython-312.pyc",
    ],
)
@pytest.mark.slow
def test_bytecode_and_numba_caches_are_dvc_ignored(path: str) -> None:
    dvc = shutil.which("dvc", path=str(Path(sys.executable).parent)) or "dvc"
    out = subprocess.run([dvc, "check-ignore", path], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and path in out.stdout, out.stderr


@pytest.mark.slow
def test_code_itself_is_not_ignored() -> None:
    dvc = shutil.which("dvc", path=str(Path(sys.executable).parent)) or "dvc"
    out = subprocess.run([dvc, "check-ignore", "pipeline/retrieval/bm25.py"], cwd=ROOT,
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 1 and out.stdout == ""
