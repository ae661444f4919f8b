"""Stage `evaluate@<method>`: effectiveness and fairness metrics of the method's run.

Writes `eval/<method>/per_query.parquet` + `metrics.json` and `metrics/<method>.json` (flat
keys such as `MRR@10`, for `dvc metrics diff`). With `train.seeds`, one `eval/<method>/seed-<n>/`
folder per seed; the method's metrics are the means over seeds, their standard deviations
under `std` (pipeline/metrics/runner.py)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from pipeline import io, paths
from pipeline.data import get_source
from pipeline.metrics import runner
from pipeline.params import FIRST_STAGE, ZERO_SHOT, get_method
from stages.common import run_stage, setup

log = logging.getLogger("stages.evaluate")


def _args(parser: argparse.ArgumentParser) -> None:
    help_ = f"evaluate the BM25 candidates themselves as the reference row {FIRST_STAGE!r}"
    parser.add_argument("--first-stage", action="store_true", help=help_)


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True, extra=_args)
    p, m, seed_runs = ns.params.evaluate, ns.method, ns.params.seed_runs_of(ns.method)
    if not ns.first_stage and m != ZERO_SHOT:
        get_method(ns.params, m)
    with ns.clock("inputs"):  # the stage logs its phases' seconds (stages.common)
        shared = runner.read_shared()
        runs = runner.read_runs(m, seed_runs, shared, ns.first_stage)
    submit = get_source(ns.params.dataset.name).submissions  # e.g. TREC Fair's formats
    info, per_seed = runner.run_info(m, shared.doc_scores, shared.complexity), {}
    seeds = ns.params.train.seeds  # each seed's fold assignment (dataset.<source>.splits)
    for seed, sub, run in runs:
        with ns.clock("metrics"):
            s = runner.seed_view(shared, seeds, seed)
            per_seed[seed], per_query = runner.evaluate_run(run, s, p)
        if submit is not None:  # the collection's own submission files of this run
            submit(run, paths.evals(m, sub), ns.params.evaluate)
        runner.write_eval(per_query, {**per_seed[seed], **info}, paths.evals(m, sub))
    several = runs[0][1] != ""  # seed-<n>/ folders: train.seeds is set
    result = {**(runner.over_seeds(per_seed) if several else per_seed[runs[0][0]]), **info}
    with ns.clock("weak, scoped and transfer metrics"):
        result |= runner.weak_metrics(m, seed_runs, shared, p, seeds)
        result = runner.merged(result, runner.scope_metrics(m, runs, shared, p, seeds))
        result = runner.merged(result, runner.transfer_metrics(m, seed_runs, p, ns.first_stage))
    if several:
        io.write_json(result, paths.evals(m) / "metrics.json")
    io.write_json(result, paths.metrics(m))
    at10 = ", ".join(f"{k} {v:.4f}" for k, v in result.items() if k.endswith("@10"))
    log.info("evaluate@%s: %d run(s); %s", m, len(runs), at10)


if __name__ == "__main__":
    run_stage(main)
