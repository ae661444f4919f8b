"""Stage `train@<method>`: one ranker of `model.arch` per fold (and seed) on the method's
ordered triples and loss → `models/<method>/[seed-<n>/]fold-<k>/` (pipeline.train.method),
its DVCLive training log → `dvclive/<method>/` (pipeline.train.live),
then each saved fold model reranks its fold's BM25 candidates → `runs/<method>/[seed-<n>/]`
`run.parquet` + `run.trec`, and every seed's first fold model the held-out collection
(pipeline.rerank). One process for both: a rerank process per method cost ~10 s each."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, paths, schemas
from pipeline.doctor import sweep_checkpoints
from pipeline.models.features import load_features
from pipeline.models.registry import load_ranker
from pipeline.params import get_method
from pipeline.rerank import write_method_runs
from pipeline.train import distributed
from pipeline.train.live import TrainLog
from pipeline.train.method import finish_method, train_method
from stages.common import run_stage, setup, texts, torch_threads

log = logging.getLogger("stages.train")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    get_method(ns.params, ns.method)
    main_rank = distributed.is_main()  # under torchrun, rank 0 alone writes the outputs
    if main_rank:  # other methods' checkpoints whose stage DVC restored: stale
        sweep_checkpoints(keep=ns.method)
    torch_threads(ns.params)
    ordered = io.read_table(paths.ordered(ns.method), schemas.ORDERED_TRIPLES)
    doc_scores = io.read_table(paths.DOC_SCORES, schemas.DOC_SCORES)
    features, text = load_features(paths.FEATURES), texts()
    models = paths.models(ns.method)
    candidates = io.read_table(paths.CANDIDATES, schemas.CANDIDATES)
    live = TrainLog(paths.live(ns.method)) if main_rank else None
    curve, weak_runs = train_method(ns.params, ns.method, ordered, text, doc_scores, models,
                                    features, live, candidates, io.read_groups(paths.CORPUS))
    if live is None:
        return
    live.close()
    for sub, run in weak_runs.items():  # EqualizeIR: the weak learners' own run
        io.write_table(run, paths.weak_run(ns.method, sub), schemas.RUN)
    log.info("train@%s: %d logged steps, final loss %.4f", ns.method, curve.height,
             curve["loss"][-1])  # fmt: skip
    transfer = io.read_table(paths.transfer_table("candidates"), schemas.CANDIDATES)
    write_method_runs(  # each seed's runs by its saved models, reloaded as users get them
        ns.params, ns.method, lambda seed, sub, fold: load_ranker(models / sub / f"fold-{fold}"),
        candidates, text, features, models=models, transfer=transfer,
    )  # fmt: skip
    finish_method(ns.params, ns.method, models)  # unkept seeds' models, its checkpoints


if __name__ == "__main__":
    run_stage(main)
