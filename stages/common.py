"""What every stage does first: logging to stderr and the validated params."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence

from pipeline.errors import disk_full_line, is_disk_full, is_expected
from pipeline.params import Params, load_params

Extra = Callable[[argparse.ArgumentParser], None]


def setup(
    description: str, argv: Sequence[str] | None, method: bool = False, extra: Extra | None = None
) -> argparse.Namespace:
    """Parse the stage's arguments, configure logging and load params.yaml into `ns.params`."""
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
    return ns


def run_stage(main: Callable[[Sequence[str] | None], None]) -> None:
    """Run `main`; the project's own errors (`pipeline.errors`) and a full disk end with one
    clear line and exit 1; anything else (a bug, CUDA out of memory) keeps its traceback."""
    try:
        main(None)
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
