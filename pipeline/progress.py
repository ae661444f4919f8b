"""Progress bars for long loops: live in a terminal, sparse in logs.

Outside a terminal (a DVC log, CI, ``nohup``) tqdm cannot redraw in place and every refresh
becomes another line, so the bar refreshes at most every 30 s there.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from tqdm import tqdm

LOG_INTERVAL_S = 30.0


def progress(iterable: Iterable[Any] | None = None, **kwargs: Any) -> tqdm:
    """A tqdm bar on stderr; ``kwargs`` as tqdm's (``total``, ``desc``, ``unit``, …)."""
    if not sys.stderr.isatty():
        kwargs["mininterval"] = max(float(kwargs.get("mininterval", 0.1)), LOG_INTERVAL_S)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, file=sys.stderr, **kwargs)
