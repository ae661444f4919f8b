"""What every stage does first: logging to stderr and the validated params."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline import timing, witness
from pipeline.errors import INTERRUPTED, disk_full_line, is_disk_full, is_expected
from pipeline.params import load_params
from pipeline.progress import configure_logging

Extra = Callable[[argparse.ArgumentParser], None]


def setup(
    description: str, argv: Sequence[str] | None, method: bool = False, extra: Extra | None = None
) -> argparse.Namespace:
    """Parse the arguments, configure logging, load params.yaml into `ns.params` (watched under
    PIPELINE_WITNESS); under DVC, check that earlier stages' outputs are cached (`guard`)."""
    clock = timing.stage_start()
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", default="params.yaml", help="params file (default params.yaml)")
    if method:
        parser.add_argument("method", help="method name under `methods:` in params.yaml")
    if extra:
        extra(parser)
    ns = parser.parse_args(argv)
    configure_logging(os.environ.get("PIPELINE_LOG", "INFO"))
    ns.params, ns.clock = witness.attach(load_params(ns.params)), clock  # `ns.clock`: phases
    stage = Path(sys.argv[0]).stem if argv is None else "stage"  # its label in the timings
    timing.stage_label(f"{stage}@{ns.method}" if method else stage)
    if os.environ.get("DVC_STAGE"):  # run by DVC: an earlier stage's output lost on its way
        from pipeline.dvc_cache import guard  # to the cache stops the run here (issue 32)
        with ns.clock("cache check"):
            guard(Path.cwd())
    return ns


def run_stage(main: Callable[[Sequence[str] | None], None]) -> None:
    """Run `main`: our errors and a full disk end with one line and exit 1, Ctrl-C with one line
    and exit 130 (writes are atomic); anything else (a bug, CUDA OOM) keeps its traceback."""
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
