"""Stage `evaluate@<method>`: effectiveness and fairness metrics of the method's run: writes
`eval/<method>/[seed-<n>/]per_query.parquet` + `metrics.json` (every key; over seeds: means,
`std`; `profile`: digests of its params, pipeline/profile.py) and the headline
`metrics/<method>.json` for `dvc metrics show/diff` (`runner.HEADLINE`); `bm25` also writes
`runs/bm25/run.trec`."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from pipeline import io, paths, profile
from pipeline.data import get_source
from pipeline.metrics import runner
from pipeline.params import FIRST_STAGE, ZERO_SHOT, get_method, get_post_entry
from stages.common import run_stage, setup

log = logging.getLogger("stages.evaluate")


def _args(parser: argparse.ArgumentParser) -> None:
    help_ = f"evaluate the BM25 candidates themselves as the reference row {FIRST_STAGE!r}"
    parser.add_argument("--first-stage", action="store_true", help=help_)


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True, extra=_args)
    p, m, seed_runs = ns.params.evaluate, ns.method, ns.params.seed_runs_of(ns.method)
    post = get_post_entry(ns.params, m) if m in ns.params.post else None  # a `post:` entry
    trained = not ns.first_stage and m != ZERO_SHOT and (post is None or post.base != ZERO_SHOT)
    _ = get_method(ns.params, m) if trained and post is None else None
    with ns.clock("inputs"):  # the stage logs its phases' seconds (stages.common)
        shared = runner.read_shared()
        runs = runner.read_runs(m, seed_runs, shared, ns.first_stage)
    info, per_seed = runner.run_info(m, shared.doc_scores, shared.complexity), {}
    submit, seeds = get_source(ns.params.dataset.name).submissions, ns.params.train.seeds
    if ns.first_stage:  # the bm25 row as a plain TREC run, as every trained method has one
        io.write_trec_run(runs[0][2], paths.runs(m) / "run.trec", tag=m)
    for seed, sub, run in runs:
        with ns.clock("metrics"):
            s = runner.seed_view(shared, seeds, seed)
            per_seed[seed], per_query = runner.evaluate_run(run, s, p)
        if submit is not None:  # the collection's own submission files of this run
            submit(run, paths.evals(m, sub), ns.params.evaluate)
        runner.write_eval(per_query, {**per_seed[seed], **info}, paths.evals(m, sub))
    result = {**(runner.over_seeds(per_seed) if runs[0][1] else per_seed[runs[0][0]]), **info}
    with ns.clock("weak, scoped and transfer metrics"):
        result |= runner.weak_metrics(m, seed_runs, shared, p, seeds)
        result = runner.merged(result, runner.scope_metrics(m, runs, shared, p, seeds))
        result = runner.merged(result, runner.transfer_metrics(m, seed_runs, p, ns.first_stage))
    result["profile"] = profile.profile(profile.read_tree(), not ns.first_stage, trained)
    io.write_json(result, paths.evals(m) / "metrics.json")
    io.write_json(runner.headline(result, ns.params.report.primary), paths.metrics(m))
    log.info("evaluate@%s: %d run(s); %s", m, len(runs), ", ".join(
        f"{k} {v:.4f}" for k, v in result.items() if k.endswith("@10")))


if __name__ == "__main__":
    run_stage(main)
