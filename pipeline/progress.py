"""Progress bars for long loops: live in a terminal, sparse in logs; values of a step.

Outside a terminal (a DVC log, CI, ``nohup``) tqdm cannot redraw in place and every refresh
becomes another line, so the bar refreshes at most every 30 s there. :func:`record` logs a
named value of the current training step (an adversary's accuracy) from any code that runs
inside it; the trainer collects them (:func:`collecting`) next to the loss
(``pipeline.train.live``).
"""

from __future__ import annotations

import contextlib
import statistics
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from tqdm import tqdm

LOG_INTERVAL_S = 30.0


NOISY = ("bm25s", "numba", "urllib3", "filelock", "fsspec")
"""Libraries whose INFO lines would drown a stage's own."""


def configure_logging(level: str = "INFO") -> None:
    """A stage's logging: ``level`` and above to stderr, with time and logger; `NOISY`
    libraries at WARNING."""
    import logging

    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # fmt: skip
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)


def progress(iterable: Iterable[Any] | None = None, **kwargs: Any) -> tqdm:
    """A tqdm bar on stderr; ``kwargs`` as tqdm's (``total``, ``desc``, ``unit``, …)."""
    if not sys.stderr.isatty():
        kwargs["mininterval"] = max(float(kwargs.get("mininterval", 0.1)), LOG_INTERVAL_S)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, file=sys.stderr, **kwargs)


StepSink = Callable[[int, Mapping[str, float]], None]

_VALUES: ContextVar[dict[str, list[float]] | None] = ContextVar("train_values", default=None)


def record(name: str, value: float) -> None:
    """Log ``value`` under ``name`` for the current training step (a no-op outside one)."""
    values = _VALUES.get()
    if values is not None:
        values.setdefault(name, []).append(float(value))


@contextlib.contextmanager
def collecting(log: StepSink | None) -> Iterator[StepSink | None]:
    """Inside the block, :func:`record` collects values; the sink yielded passes each curve
    row to ``log`` with the means of the values recorded since the previous row."""
    values: dict[str, list[float]] = {}
    token = _VALUES.set(values)

    def sink(step: int, row: Mapping[str, float]) -> None:
        assert log is not None
        means = {k: statistics.fmean(v) for k, v in values.items() if v}
        values.clear()
        log(step, {**row, **means})

    try:
        yield sink if log else None
    finally:
        _VALUES.reset(token)
