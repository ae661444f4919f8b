"""Stage `report`: summary tables (absolute and % change vs the baseline with significance),
the comparison CSV, the trade-off plot data and the report figures."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline.params import FIRST_STAGE
from pipeline.report.build import build_report
from stages.common import run_stage, setup

log = logging.getLogger("stages.report")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    params = ns.params
    # The method list comes from params, not from a glob: removed methods leave stale files.
    methods = list(params.methods)
    written = build_report(
        [FIRST_STAGE, *methods],
        eval_dir="eval",
        out_dir="metrics",
        cutoffs=params.evaluate.cutoffs,
        baseline=methods[0],
        reference=(FIRST_STAGE,),
        info={"dataset": params.dataset.name, "model": params.model.name},
        plots_dir="plots/report",
        train_dir="plots/train",
    )
    log.info("report: %d methods (baseline %s), %d files", len(methods), methods[0], len(written))


if __name__ == "__main__":
    run_stage(main)
