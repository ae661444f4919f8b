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

Extra = Callable[[argparse.ArgumentParser], None]


def setup(
    description: str, argv: Sequence[str] | None, method: bool = False, extra: Extra | None = None
) -> argparse.Namespace:
    """Parse the stage's arguments, configure logging and load params.yaml into `ns.params`;
    under DVC, check first that the outputs of the stages before are in its cache
    (`pipeline.dvc_cache.guard`)."""
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
    if os.environ.get("DVC_STAGE"):  # run by DVC: an earlier stage's output lost on its way
        from pipeline.dvc_cache import guard  # to the cache stops the run here (issue 32)

        guard(Path.cwd())
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
    """``(query text by id, document text by id)`` from data/queries and data/corpus, and
    (``transfer``) the held-out collection's data/transfer/ texts, whose ids never collide."""
    from pipeline import io, paths, schemas

    tables = [(paths.QUERIES, paths.CORPUS)]
    if transfer:
        tables.append((paths.transfer_table("queries"), paths.transfer_table("corpus")))
    queries: dict[str, str] = {}
    docs: dict[str, str] = {}
    for q_path, c_path in tables:
        q = io.read_table(q_path, schemas.QUERIES).select("query_id", "text")
        c = io.read_table(c_path, schemas.CORPUS).select("doc_id", "text")
        queries |= dict(q.iter_rows())
        docs |= dict(c.iter_rows())
    return queries, docs


def torch_threads(params: Params) -> None:
    import torch

    torch.set_num_threads(params.train.threads)
