"""What every stage does first: logging to stderr and the validated params."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline import timing, witness
from pipeline.errors import disk_full_line, is_disk_full, is_expected
from pipeline.params import load_params

Extra = Callable[[argparse.ArgumentParser], None]
INTERRUPTED = (
    "interrupted: rerun `dvc repro` to resume (finished stages are kept, and training continues "
    "from its last checkpoint when train.checkpoint_every is set; no output is half-written)"
)
"""The one line a stage stopped by Ctrl-C (SIGINT) ends with (exit code 130)."""


def setup(
    description: str, argv: Sequence[str] | None, method: bool = False, extra: Extra | None = None
) -> argparse.Namespace:
    """Parse the arguments, configure logging, load params.yaml into `ns.params`; under DVC,
    check that earlier stages' outputs are cached (`pipeline.dvc_cache.guard`). `ns.clock`
    (pipeline.timing) times the phases from start-up on; `run_stage` logs them at the end."""
    clock = timing.stage_start()
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", default="params.yaml", help="params file (default params.yaml)")
    if method:
        parser.add_argument("method", help="method name under `methods:` in params.yaml")
    if extra:
        extra(parser)
    ns = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("PIPELINE_LOG", "INFO"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # fmt: skip
    for noisy in ("bm25s", "numba", "urllib3", "filelock", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    ns.params, ns.clock = load_params(ns.params), clock
    if witness.enabled():  # PIPELINE_WITNESS: record the keys read and the files run
        ns.params = witness.watch(ns.params)
        witness.start()
    stage = Path(sys.argv[0]).stem if argv is None else "stage"
    timing.stage_label(f"{stage}@{ns.method}" if method else stage)
    if os.environ.get("DVC_STAGE"):  # run by DVC: an earlier stage's output lost on its way
        from pipeline.dvc_cache import guard  # to the cache stops the run here (issue 32)

        with ns.clock("cache check"):
            guard(Path.cwd())
    return ns


def run_stage(main: Callable[[Sequence[str] | None], None]) -> None:
    """Run `main`; the project's own errors (`pipeline.errors`) and a full disk end with one
    clear line and exit 1; Ctrl-C (SIGINT) with one line and exit 130 (every write is atomic,
    `pipeline.io`: an output is whole or absent); anything else (a bug, CUDA out of memory)
    keeps its traceback."""
    timing.stage_reset()
    try:
        main(None)
        if witness.enabled():
            witness.dump(Path(sys.argv[0]).stem)
        if (line := timing.stage_line()) is not None:
            logging.getLogger("stages").info("%s", line)
    except KeyboardInterrupt:
        logging.getLogger("stages").error("%s", INTERRUPTED)
        sys.exit(130)
    except Exception as e:
        if not is_expected(e) and not is_disk_full(e):
            raise
        logging.getLogger("stages").error("%s", e if is_expected(e) else disk_full_line(e))
        sys.exit(1)
