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

import errno
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


_ENOSPC_TEXTS = ("No space left on device", "StorageFull")  # the OS's words; Rust's


def is_disk_full(error: BaseException) -> bool:
    """`error`, or an error it was raised from, is ENOSPC, whichever library raised it (an
    `OSError`, safetensors' `SafetensorError`, torch's `RuntimeError` carry it differently)."""
    return any(
        (isinstance(e, OSError) and e.errno == errno.ENOSPC)
        or any(t in str(e) for t in _ENOSPC_TEXTS)
        for e in _chain(error)
    )


def disk_full_line(error: BaseException) -> str:
    """One line for a full disk that no writer of ours reported (a library's own file)."""
    name = next((e.filename for e in _chain(error) if isinstance(e, OSError) and e.filename), None)
    where = f"{name}: " if name else ""
    return (
        f"{where}no space left on device ({type(error).__name__}: {str(error)[:200]}); the "
        "stage failed, so DVC records none of its outputs. Free space (`df -h .`) and rerun "
        "`dvc repro`."
    )


def _chain(error: BaseException) -> list[BaseException]:
    """`error` and the errors it was raised from (`__cause__`, else `__context__`)."""
    out: list[BaseException] = []
    e: BaseException | None = error
    while e is not None and all(e is not x for x in out):
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def is_expected(error: BaseException) -> bool:
    """A missing input file, or a ``ValueError``/``RuntimeError`` our own checks raised."""
    if isinstance(error, FileNotFoundError):
        return True
    return isinstance(error, ValueError | RuntimeError) and raised_by_us(error)
