"""The project's own errors, recognised by type: a stage answers them with one line.

Every check of ours raises a subclass of :class:`PipelineError` with a message naming the
file or key and the fix: :class:`InputError` (also a ``ValueError``) for bad input (params,
tables, files), :class:`SetupError` (also a ``RuntimeError``) for what the machine
lacks (a package, GPUs, network). Subclasses name the area (``ParamsError``, ``SchemaError``,
``ArtifactError``, ``GrepBiasIRError``, …). A missing input file (``FileNotFoundError``) is
expected too. Anything else, a bug or a library's error (a CUDA out-of-memory, a shape
mismatch inside torch, ``int('x')``), keeps its traceback, whatever its type.
"""

from __future__ import annotations

import errno


class PipelineError(Exception):
    """Base of every error the project raises on purpose (a check with a message)."""


class InputError(PipelineError, ValueError):
    """Bad input: a params key, a table, a file; the message names it and the fix."""


class SetupError(PipelineError, RuntimeError):
    """The machine lacks something the run needs (a package, GPUs, network)."""


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
    """A check of ours (:class:`PipelineError`) or a missing input file."""
    return isinstance(error, PipelineError | FileNotFoundError)
