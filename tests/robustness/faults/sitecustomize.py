"""Fault injection for tests that run a real stage or `dvc repro` in a subprocess.

Put this folder on PYTHONPATH and set ``PIPELINE_FAULT=<module>:<attribute>:<fault>[:<n>]``:
once ``<module>`` is imported, its ``<attribute>`` (dotted, e.g. ``Ranker.save``) is wrapped
so that its ``n``-th call (default 1) does ``<fault>`` instead:

- ``kill``: SIGKILL this process (a kill at a known point, e.g. after the last checkpoint
  and before the model is saved, or after DVC opened a file for writing, which empties it);
- ``cut``: for a dumper called as ``f(data, stream)`` (``json.dump``, DVC's YAML ``_dump``):
  write the first half of what it would write to ``stream``, then SIGKILL this process, as
  a kill in the middle of DVC rewriting ``.dvc/tmp/rwlock`` or ``dvc.lock`` does;
- ``enospc``: raise ``OSError(ENOSPC)`` after writing half of a kilobyte to the first
  path-like argument, as a full disk does;
- ``safetensors``: raise safetensors' own ``SafetensorError`` for a full disk (the message
  the Rust writer gives);
- ``full``: a nearly full disk, on every call from the ``n``-th: a copy ``f(src, dst, …)`` of
  a file larger than 4 KiB writes 512 bytes to ``dst`` and raises ``OSError(ENOSPC)``;
  smaller copies go through (DVC's 4-byte test of its link types, a small lock file).

Python imports ``sitecustomize`` at start-up, so the fault reaches processes that DVC starts.
"""

from __future__ import annotations

import errno
import functools
import importlib.abc
import importlib.machinery
import os
import signal
import sys
from pathlib import Path
from typing import Any

SPEC = os.environ.get("PIPELINE_FAULT", "")


def _fault(kind: str, args: tuple[Any, ...]) -> None:
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "enospc":
        path = next((a for a in args if isinstance(a, str | Path)), None)
        if path is not None:
            Path(path).write_bytes(b"\0" * 512)  # what fitted before the disk was full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path) if path else None)
    if kind == "safetensors":
        from safetensors import SafetensorError

        raise SafetensorError(
            "Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "
            '"No space left on device" })'
        )
    raise ValueError(f"PIPELINE_FAULT: unknown fault {kind!r}")


def _full(args: tuple[Any, ...]) -> None:
    """A copy of a file over 4 KiB on a nearly full disk (module docstring, ``full``)."""
    paths = [a for a in args if isinstance(a, str | Path)]
    if len(paths) < 2 or not os.path.isfile(paths[0]) or os.path.getsize(paths[0]) <= 4096:
        return
    Path(paths[1]).write_bytes(b"\0" * 512)
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(paths[1]))


def _cut(original: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    import io

    data, stream = args[0], args[1]
    buffer = io.StringIO()
    original(data, buffer, *args[2:], **kwargs)
    text = buffer.getvalue()
    stream.write(text[: len(text) // 2])
    stream.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _wrap(module: Any, attribute: str, kind: str, nth: int) -> None:
    *owners, name = attribute.split(".")
    owner = module
    for part in owners:
        owner = getattr(owner, part)
    original = getattr(owner, name)
    calls = [0]

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == nth and kind == "cut":
            _cut(original, args, kwargs)
        if kind == "full":
            if calls[0] >= nth:
                _full(args)
        elif calls[0] == nth:
            _fault(kind, args)
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


class _Patcher(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Lets the normal finders load the module, then wraps the attribute."""

    def __init__(self, module: str, attribute: str, kind: str, nth: int) -> None:
        self.args = (module, attribute, kind, nth)
        self.done = False

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        # Every lookup gets a spec (a probe such as transformers' `find_spec("torch")` imports
        # nothing); the module is wrapped when it is executed, once.
        if fullname != self.args[0] or self.done:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        self.inner = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.done = True
        self.inner.exec_module(module)
        _wrap(module, *self.args[1:])


if SPEC:
    import importlib.util

    _module, _attribute, _kind, *_n = SPEC.split(":")
    sys.meta_path.insert(0, _Patcher(_module, _attribute, _kind, int(_n[0]) if _n else 1))
