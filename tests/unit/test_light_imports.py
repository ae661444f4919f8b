"""Stages that run no model start without torch/transformers (process start-up time), and
loading params never imports torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import stages

pytestmark = pytest.mark.slow  # the fast loop skips it (README)

LIGHT = ["pipeline.params", "pipeline.train.losses", *stages.LIGHT]


@pytest.mark.parametrize("module", LIGHT)
def test_module_does_not_import_torch(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing {module} imports {out.stdout.strip()}"


def test_loading_params_does_not_import_torch() -> None:
    """Validating params.yaml checks every loss and ordering name against its registry
    (pipeline.train.losses, pipeline.ordering) without importing torch or transformers."""
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys, pipeline.params\n"
        "p = pipeline.params.load_params('params.yaml')\n"
        "heavy = sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
        "print(len(p.methods), ','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    n_methods, _, heavy = out.stdout.strip().partition(" ")
    assert int(n_methods) > 0
    assert heavy == "", f"loading params imports {heavy}"
