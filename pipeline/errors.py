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


class PipelineError(Exception):
    """Base of every error the project raises on purpose (a check with a message)."""


class InputError(PipelineError, ValueError):
    """Bad input: a params key, a table, a file; the message names it and the fix."""


class SetupError(PipelineError, RuntimeError):
    """The machine lacks something the run needs (a package, GPUs, network)."""


def is_expected(error: BaseException) -> bool:
    """A check of ours (:class:`PipelineError`) or a missing input file."""
    return isinstance(error, PipelineError | FileNotFoundError)
