"""The environment of a subprocess under test: offline, quiet, and optionally with a fault
injected (tests/robustness/faults/sitecustomize.py: ``PIPELINE_FAULT``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

FAULTS = Path(__file__).resolve().parent / "faults"


def env(fault: str | None = None) -> dict[str, str]:
    """``os.environ`` with this interpreter's scripts first on PATH (``dvc``), no network,
    stage logs at WARNING, and ``fault`` (``<module>:<attribute>:<fault>[:<n>]``) armed."""
    out = dict(os.environ)
    out["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{out.get('PATH', '')}"
    out.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIPELINE_LOG="WARNING")
    if fault:
        out["PYTHONPATH"] = os.pathsep.join([str(FAULTS), out.get("PYTHONPATH", "")])
        out["PIPELINE_FAULT"] = fault
    return out
