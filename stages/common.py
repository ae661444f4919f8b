"""What every stage does first: logging to stderr and the validated params."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.errors import disk_full_line, is_disk_full, is_expected
from pipeline.params import Params, load_params
from pipeline.timing import Phases, startup_seconds

Extra = Callable[[argparse.ArgumentParser], None]


def setup(
    description: str, argv: Sequence[str] | None, method: bool = False, extra: Extra | None = None
) -> argparse.Namespace:
    """Parse the stage's arguments, configure logging and load params.yaml into `ns.params`;
    under DVC, check first that the outputs of the stages before are in its cache
    (`pipeline.dvc_cache.guard`). `ns.clock` (pipeline.timing) times the stage's phases from
    the process's start-up on, and `run_stage` logs them when the stage ends."""
    global _CLOCK
    _CLOCK = (Phases({"start-up": startup_seconds() or 0.0}), "")
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", default="params.yaml", help="params file (default params.yaml)")
    if method:
        parser.add_argument("method", help="method name under `methods:` in params.yaml")
    if extra:
        extra(parser)
    ns = parser.parse_args(argv)
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=os.environ.get("PIPELINE_LOG", "INFO"), format=fmt, stream=sys.stderr)
    for noisy in ("bm25s", "numba", "urllib3", "filelock", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    ns.params = load_params(ns.params)
    stage = Path(sys.argv[0]).stem if argv is None else "stage"
    _CLOCK = (_CLOCK[0], f"{stage}@{ns.method}" if method else stage)
    ns.clock = _CLOCK[0]
    if os.environ.get("DVC_STAGE"):  # run by DVC: an earlier stage's output lost on its way
        from pipeline.dvc_cache import guard  # to the cache stops the run here (issue 32)

        with ns.clock("cache check"):
            guard(Path.cwd())
    return ns


_CLOCK: tuple[Phases, str] | None = None
"""The running stage's phases and its label (``train@baseline``), set by ``setup``."""


def run_stage(main: Callable[[Sequence[str] | None], None]) -> None:
    """Run `main`; the project's own errors (`pipeline.errors`) and a full disk end with one
    clear line and exit 1; anything else (a bug, CUDA out of memory) keeps its traceback."""
    global _CLOCK
    _CLOCK = None
    try:
        main(None)
        if _CLOCK is not None:
            logging.getLogger("stages").info("%s", _CLOCK[0].line(_CLOCK[1]))
    except Exception as e:
        if not is_expected(e) and not is_disk_full(e):
            raise
        logging.getLogger("stages").error("%s", e if is_expected(e) else disk_full_line(e))
        sys.exit(1)


def texts(transfer: bool = True) -> tuple[dict[str, str], dict[str, str]]:
    """Query and document texts by id (and the held-out collection's: ``transfer``)."""
    from pipeline import io, paths

    return io.read_texts(paths.text_tables(transfer))


def torch_threads(params: Params) -> None:
    import torch

    torch.set_num_threads(params.train.threads)
