"""Stage `evaluate@<method>`: effectiveness and fairness metrics of the method's run: writes
`eval/<method>/[seed-<n>/]per_query.parquet` + `metrics.json` and `metrics/<method>.json` (flat
keys for `dvc metrics diff`; over seeds: means, `std`, `seeds`, pipeline/metrics/runner.py;
`profile`: digests of its params, pipeline/profile.py); `bm25` also writes `runs/bm25/run.trec`.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from pipeline import io, paths, profile
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
    if ns.first_stage:  # the bm25 row as a plain TREC run, as every trained method has one
        io.write_trec_run(runs[0][2], paths.runs(m) / "run.trec", tag=m)
    for seed, sub, run in runs:
        per_seed[seed], per_query = runner.evaluate_run(run, shared, p, trec_fair=trec_fair)
        if trec_fair:  # the track's submission files of this run (seed 004 §3.6)
            write_submissions(run, paths.evals(m, sub), temperature=p.exposure_temperature)
        runner.write_eval(per_query, {**per_seed[seed], **info}, paths.evals(m, sub))
    several = runs[0][1] != ""  # seed-<n>/ folders: train.seeds is set
    result = {**(runner.over_seeds(per_seed) if several else per_seed[runs[0][0]]), **info}
    result |= runner.weak_metrics(m, ns.params.seed_runs_of(m), shared, p)
    moved = runner.transfer_metrics(m, ns.params.seed_runs_of(m), p, ns.first_stage)
    std = {**result.get("std", {}), **moved.pop("std", {})}
    result |= moved | ({"std": std} if std else {})
    trained = not ns.first_stage and m != ZERO_SHOT
    result["profile"] = profile.profile(profile.read_tree(), not ns.first_stage, trained)
    if several:
        io.write_json(result, paths.evals(m) / "metrics.json")
    io.write_json(result, paths.metrics(m))
    at10 = ", ".join(f"{k} {v:.4f}" for k, v in result.items() if k.endswith("@10"))
    log.info("evaluate@%s: %d run(s); %s", m, len(runs), at10)


if __name__ == "__main__":
    run_stage(main)
