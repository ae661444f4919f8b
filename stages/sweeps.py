"""Sweep plots from `dvc exp show --json` (a command, not a DVC stage): for each swept
parameter, `<out-dir>/<param>.csv` and `.png` of the metrics per value (pipeline/report/sweeps.py).

    dvc exp run -S 'orderings.curriculum.sigma=0.5,1,2,3' --queue && dvc queue start
    dvc exp show --json > exps.json && python -m stages.sweeps exps.json --out-dir plots/sweeps
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from pipeline.report import sweeps

log = logging.getLogger("stages.sweeps")


def _parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser("python -m stages.sweeps", None, __doc__, formatter_class=raw)
    parser.add_argument("json", help="output of `dvc exp show --json` (a file, or - for stdin)")
    for flag, default, what in (
        ("--param", list(sweeps.DEFAULT_PARAMS), "swept parameter; methods.*.<key> is per method"),
        ("--metric", list(sweeps.DEFAULT_METRICS), "metric key of metrics/<method>.json"),
        ("--method", "all", "only these methods"),
        ("--where", "none", "keep experiments whose param equals a value: key=value"),
    ):
        parser.add_argument(flag, action="append", help=f"{what} (repeatable; default {default})")
    parser.add_argument("--out-dir", default="plots/sweeps", help="output folder (plots/sweeps)")
    parser.add_argument("--workspace", action="store_true", help="include the workspace row")
    parser.add_argument("--logx", action="store_true", help="log-scale x axis (for λ grids)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Read the JSON, write `<out-dir>/<param>.{csv,png}`; 1 on unreadable input."""
    ns = _parser().parse_args(argv)
    logging.basicConfig(level="INFO", format="%(levelname)s %(name)s: %(message)s")
    try:
        text = sys.stdin.read() if ns.json == "-" else Path(ns.json).read_text(encoding="utf-8")
        exps = sweeps.experiments(json.loads(text), workspace=ns.workspace)
        params, metrics = ns.param or sweeps.DEFAULT_PARAMS, ns.metric or sweeps.DEFAULT_METRICS
        where = sweeps.parse_where(ns.where or [])
        written = sweeps.write_sweeps(
            exps, ns.out_dir, params, metrics, methods=ns.method, where=where, logx=ns.logx
        )
    except (OSError, ValueError) as e:
        log.error("%s", e)
        return 1
    log.info("%d experiments, %d files written under %s", len(exps), len(written), ns.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
