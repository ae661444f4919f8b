"""Which errors a stage answers with one line, and which keep their traceback.

The project's own checks raise ``ValueError`` subclasses (``ParamsError``, ``SchemaError``,
``ArtifactError``, ``GrepBiasIRError``, …) or ``RuntimeError`` (a missing package, too few
GPUs), each with a message naming the file or key and the fix; a missing input file is a
``FileNotFoundError``. Those end a stage with one ``ERROR`` line. A bug or a library's error
(a CUDA out-of-memory, a shape mismatch inside torch, ``int('x')`` in our code) must keep its
traceback, yet it can have the same type; what tells them apart is where it was raised: a
``raise`` statement of ``pipeline/`` or ``stages/`` is a check of ours.
"""

from __future__ import annotations

import linecache
import os
from pathlib import Path

_PIPELINE = Path(__file__).resolve().parent
ROOTS = (f"{_PIPELINE}{os.sep}", f"{_PIPELINE.parent / 'stages'}{os.sep}")
"""Source folders whose ``raise`` statements are the project's own checks."""


def raised_by_us(error: BaseException) -> bool:
    """``error`` comes from a ``raise`` statement in ``pipeline/`` or ``stages/``."""
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename
    line = linecache.getline(path, tb.tb_lineno).lstrip()
    return str(Path(path).resolve()).startswith(ROOTS) and line.startswith("raise")


def is_expected(error: BaseException) -> bool:
    """A missing input file, or a ``ValueError``/``RuntimeError`` our own checks raised."""
    if isinstance(error, FileNotFoundError):
        return True
    return isinstance(error, ValueError | RuntimeError) and raised_by_us(error)
