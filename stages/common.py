"""What every stage does first: logging to stderr and the validated params."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence

from pipeline.params import Params, load_params

log = logging.getLogger("stages")


def setup(
    description: str,
    argv: Sequence[str] | None,
    method: bool = False,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """Parse the stage's arguments, configure logging and load params.yaml into `ns.params`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", default="params.yaml", help="params file (default params.yaml)")
    if method:
        parser.add_argument("method", help="method name under `methods:` in params.yaml")
    if extra:
        extra(parser)
    ns = parser.parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("PIPELINE_LOG", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("bm25s", "numba", "urllib3", "filelock", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    ns.params = load_params(ns.params)
    return ns


def run_stage(main: Callable[[Sequence[str] | None], None]) -> None:
    """Run `main`; expected errors (bad input, bad params) end with one clear line, exit 1."""
    try:
        main(None)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        log.error("%s", e)
        sys.exit(1)


def torch_threads(params: Params) -> None:
    import torch

    torch.set_num_threads(params.train.threads)
