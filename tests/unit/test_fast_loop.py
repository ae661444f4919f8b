"""The README's fast test loop (`pytest -m "not slow"`) selects the quick tests and leaves out
every test marked `slow`, which the full suite (CI) still runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_fast_loop_deselects_the_slow_tests() -> None:
    cmd = [sys.executable, "-m", "pytest", "-m", "not slow", "--collect-only", "-q"]
    out = subprocess.run(
        [*cmd, "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    m = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", out)
    assert m, out[-2000:]
    selected, total, deselected = (int(g) for g in m.groups())
    assert selected > 0 and deselected > 0 and selected + deselected == total
    assert "test_the_fast_loop_deselects_the_slow_tests" not in out
