"""Stage `train@<method>`: a ranker of `model.arch` per fold (and seed) on the method's ordered
triples and loss → `models/`, `dvclive/`; the worker that trained a model reloads it and reranks
its fold's BM25 candidates (first fold: the held-out collection too) → `runs/<method>/`."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, paths, schemas
from pipeline.doctor_checkpoints import sweep_checkpoints
from pipeline.models.features import load_features
from pipeline.params import get_method
from pipeline.rerank import write_runs
from pipeline.timing import Phases
from pipeline.train import distributed
from pipeline.train.live import TrainLog
from pipeline.train.method import finish_method, train_method
from stages.common import run_stage, setup
from stages.inputs import texts, torch_threads

log = logging.getLogger("stages.train")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    get_method(ns.params, ns.method)
    main_rank = distributed.is_main()  # under torchrun, rank 0 alone writes the outputs
    if main_rank:  # other methods' checkpoints whose stage DVC restored: stale
        sweep_checkpoints(keep=ns.method)
    with ns.clock("inputs"):
        torch_threads(ns.params)
        ordered = io.read_table(paths.ordered(ns.method), schemas.ORDERED_TRIPLES)
        doc_scores = io.read_table(paths.DOC_SCORES, schemas.DOC_SCORES)
        features, text = load_features(paths.FEATURES), texts()
        candidates = io.read_table(paths.CANDIDATES, schemas.CANDIDATES)
        transfer = io.read_table(paths.transfer_table("candidates"), schemas.CANDIDATES)
        groups = io.read_groups(paths.CORPUS)
    models = paths.models(ns.method)
    with ns.clock("DVCLive"):  # seconds by phase: the stage's last log line (stages.common)
        live = TrainLog(paths.live(ns.method)) if main_rank else None
    with ns.clock("jobs"):
        done = train_method(ns.params, ns.method, ordered, text, doc_scores, models, features,
                            live, candidates, transfer, groups)  # fmt: skip
    if live is None:
        return
    with ns.clock("writing"):
        live.close()
        for sub, run in done.weak_runs.items():  # EqualizeIR: the weak learners' own run
            io.write_table(run, paths.weak_run(ns.method, sub), schemas.RUN)
        for r in done.runs:  # made by each seed's saved models, reloaded as users get them
            write_runs(ns.params, ns.method, r.seed, r.sub, r.run, r.transfer, models=models)
        finish_method(ns.params, ns.method, models)  # unkept seeds' models, its checkpoints
    log.info("train@%s: %d logged steps, final loss %.4f", ns.method, done.curve.height,
             done.curve["loss"][-1])  # fmt: skip
    log.info("%s", Phases(done.seconds).line(f"train@{ns.method} jobs (sum over models)"))


if __name__ == "__main__":
    run_stage(main)
