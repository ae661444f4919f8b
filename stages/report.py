"""Stage `report`: metrics/summary.md and metrics/summary.csv, one row per method."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io
from pipeline.params import FIRST_STAGE
from pipeline.report.tables import summary_frame, summary_markdown
from stages.common import run_stage, setup

log = logging.getLogger("stages.report")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    params = ns.params
    # The method list comes from params, not from a glob: removed methods leave stale files.
    names = [FIRST_STAGE, *params.methods]
    metrics = {m: io.read_json(f"eval/{m}/metrics.json") for m in names}
    df = summary_frame(metrics)
    first = next(iter(metrics.values()))
    info = {k: str(first[k]) for k in ("tokenizer", "lexicon") if k in first}
    info["dataset"] = params.dataset.name
    info["model"] = params.model.name
    io.write_text(summary_markdown(df, params.evaluate.cutoffs, info), "metrics/summary.md")
    io.write_text(df.write_csv(float_precision=6), "metrics/summary.csv")
    log.info("report: %d methods → metrics/summary.md, metrics/summary.csv", df.height)


if __name__ == "__main__":
    run_stage(main)
