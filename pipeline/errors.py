"""The project's own errors, recognised by type: a stage answers them with one line.

Every check of ours raises a subclass of :class:`PipelineError` with a message naming the
file or key and the fix: :class:`InputError` (also a ``ValueError``) for bad input (params,
tables, files), :class:`SetupError` (also a ``RuntimeError``) for what the machine
lacks (a package, GPUs, network). Subclasses name the area (``ParamsError``, ``SchemaError``,
``ArtifactError``, ``GrepBiasIRError``, …). A missing input file (``FileNotFoundError``) is
expected too. Anything else, a bug or a library's error (a CUDA out-of-memory, a shape
mismatch inside torch, ``int('x')``), keeps its traceback, whatever its type.

A write that finds no room, whatever library made it, is one line too: no space left
(``ENOSPC``), a file larger than the file system or ``ulimit -f`` allows (``EFBIG``), a disk
quota exceeded (``EDQUOT``) (:func:`storage_errno`, :func:`storage_words`). The fix a message
suggests fits the command that was run (:class:`Command`): a stage's says "rerun `dvc
repro`", ``fair-eval``'s never mentions params.yaml or DVC.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


class PipelineError(Exception):
    """Base of every error the project raises on purpose (a check with a message)."""


class InputError(PipelineError, ValueError):
    """Bad input: a params key, a table, a file; the message names it and the fix."""


class SetupError(PipelineError, RuntimeError):
    """The machine lacks something the run needs (a package, GPUs, network)."""


# -- the command being run: what a fix tells the user to do ---------------------------------


@dataclass(frozen=True)
class Command:
    """How the running command is rerun and what fixes a missing input file of it."""

    rerun: str
    """How to rerun it, after a fix: ``rerun `dvc repro```."""
    missing: str
    """What to do about a missing input file."""
    failed: str
    """What a failed run leaves: ``the stage failed, so DVC records none of its outputs``."""
    room: str = ""
    """Where else room can be made, after "Free space there": the DVC cache for a stage."""


PIPELINE = Command(
    rerun="rerun `dvc repro`",
    missing="Run the stage that produces it (`dvc repro`) or fix the path in params.yaml.",
    failed="the stage failed, so DVC records none of its outputs",
    room=" (or move the DVC cache: `dvc cache dir`)",
)
_COMMAND: ContextVar[Command] = ContextVar("command", default=PIPELINE)


def command() -> Command:
    """The command being run (:data:`PIPELINE` unless :func:`running` says otherwise)."""
    return _COMMAND.get()


@contextlib.contextmanager
def running(cmd: Command) -> Iterator[None]:
    """Errors raised inside suggest the fixes of ``cmd`` (e.g. ``fair-eval``'s)."""
    token = _COMMAND.set(cmd)
    try:
        yield
    finally:
        _COMMAND.reset(token)


# -- a write that finds no room: ENOSPC, EFBIG, EDQUOT ----------------------------------------

STORAGE_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
# What libraries that drop the errno say instead: the OS's words; Rust's ErrorKind names.
_TEXTS = {
    "No space left on device": errno.ENOSPC, "StorageFull": errno.ENOSPC,
    "File too large": errno.EFBIG, "FileTooLarge": errno.EFBIG,
    "Disk quota exceeded": errno.EDQUOT, "QuotaExceeded": errno.EDQUOT,
}  # fmt: skip
_WORDS = {
    errno.ENOSPC: "no space left on device",
    errno.EFBIG: "file too large (EFBIG: over the file system's largest file or the "
    "process's file-size limit, `ulimit -f`)",
    errno.EDQUOT: "disk quota exceeded (EDQUOT: your quota on that file system is used up; "
    "`quota -s` shows it)",
}
_FIXES = {
    errno.ENOSPC: "Free space there",
    errno.EFBIG: "Write it to a file system without that limit, or raise `ulimit -f`,",
    errno.EDQUOT: "Free space in your quota (or ask for a larger one)",
}


def storage_errno(error: BaseException) -> int | None:
    """ENOSPC, EFBIG or EDQUOT when `error`, or an error it was raised from, is one, whichever
    library raised it (an `OSError`, safetensors' `SafetensorError`, torch's `RuntimeError`
    carry it differently); else None."""
    for e in _chain(error):
        if isinstance(e, OSError) and e.errno in STORAGE_ERRNOS:
            return e.errno
        code = next((c for t, c in _TEXTS.items() if t in str(e)), None)
        if code is not None:
            return code
    return None


def is_disk_full(error: BaseException) -> bool:
    """`error` is a write that found no room (:func:`storage_errno`)."""
    return storage_errno(error) is not None


def storage_words(code: int | None) -> str:
    """What happened, in words (``no space left on device``, ``file too large (EFBIG…)``)."""
    return _WORDS.get(code or errno.ENOSPC, _WORDS[errno.ENOSPC])


def storage_fix(code: int | None, room: bool = True) -> str:
    """The fix, with the rerun of the command being run: ``Free space there (or move the DVC
    cache: `dvc cache dir`) and rerun `dvc repro`.``; ``room=False``: no other place to make
    room is suggested (a checkpoint: the DVC cache holds none)."""
    cmd = command()
    where = cmd.room if room and code in (None, errno.ENOSPC, errno.EDQUOT) else ""
    return f"{_FIXES.get(code or errno.ENOSPC, _FIXES[errno.ENOSPC])}{where} and {cmd.rerun}."


def disk_full_line(error: BaseException) -> str:
    """One line for a full disk (or EFBIG, EDQUOT) that no writer of ours reported (a
    library's own file)."""
    name = next((e.filename for e in _chain(error) if isinstance(e, OSError) and e.filename), None)
    where = f"{name}: " if name else ""
    code = storage_errno(error)
    return (
        f"{where}{storage_words(code)} ({type(error).__name__}: {str(error)[:200]}); "
        f"{command().failed}. {storage_fix(code)}"
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


INTERRUPTED = (
    "interrupted: rerun `dvc repro` to resume (finished stages are kept, and training continues "
    "from its last checkpoint when train.checkpoint_every is set; no output is half-written)"
)
"""The one line a stage stopped by Ctrl-C (SIGINT) ends with (exit code 130)."""
