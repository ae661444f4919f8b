"""Stage `evaluate@<method>`: effectiveness and fairness metrics of the method's run.

Writes `eval/<method>/per_query.parquet` + `metrics.json` and `metrics/<method>.json` (flat
keys such as `MRR@10`, for `dvc metrics diff`). With `train.seeds`, one `eval/<method>/seed-<n>/`
folder per seed, and the method's metrics are the means over seeds, with their standard
deviations under `std` and the seeds under `seeds` (pipeline/metrics/runner.py).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from pipeline import io, paths
from pipeline.data.trec_fair_submission import write_submissions
from pipeline.metrics import runner
from pipeline.params import FIRST_STAGE, ZERO_SHOT, get_method
from stages.common import run_stage, setup

log = logging.getLogger("stages.evaluate")


def _args(parser: argparse.ArgumentParser) -> None:
    help_ = f"evaluate the BM25 candidates themselves as the reference row {FIRST_STAGE!r}"
    parser.add_argument("--first-stage", action="store_true", help=help_)


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True, extra=_args)
    p, shared, m = ns.params.evaluate, runner.read_shared(), ns.method
    if not ns.first_stage and m != ZERO_SHOT:
        get_method(ns.params, m)
    runs = runner.read_runs(m, ns.params.seed_runs_of(m), shared, ns.first_stage)
    trec_fair = ns.params.dataset.name == runner.TREC_FAIR
    info = runner.run_info(m, shared.doc_scores, shared.complexity)
    per_seed: dict[int, dict[str, float]] = {}
    seeds = ns.params.train.seeds  # each seed's fold assignment (dataset.*.splits)
    for seed, sub, run in runs:
        s = runner.seed_view(shared, seeds, seed)
        per_seed[seed], per_query = runner.evaluate_run(run, s, p, trec_fair=trec_fair)
        if trec_fair:  # the track's submission files of this run (seed 004 §3.6)
            write_submissions(run, paths.evals(m, sub), temperature=p.exposure_temperature)
        runner.write_eval(per_query, {**per_seed[seed], **info}, paths.evals(m, sub))
    several = runs[0][1] != ""  # seed-<n>/ folders: train.seeds is set
    result = {**(runner.over_seeds(per_seed) if several else per_seed[runs[0][0]]), **info}
    result |= runner.weak_metrics(m, ns.params.seed_runs_of(m), shared, p, seeds)
    result = runner.merged(result, runner.scope_metrics(m, runs, shared, p, seeds))
    moved = runner.transfer_metrics(m, ns.params.seed_runs_of(m), p, ns.first_stage)
    result = runner.merged(result, moved)
    if several:
        io.write_json(result, paths.evals(m) / "metrics.json")
    io.write_json(result, paths.metrics(m))
    at10 = ", ".join(f"{k} {v:.4f}" for k, v in result.items() if k.endswith("@10"))
    log.info("evaluate@%s: %d run(s); %s", m, len(runs), at10)


if __name__ == "__main__":
    run_stage(main)
