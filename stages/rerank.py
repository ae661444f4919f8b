"""Stage `rerank_zero_shot` (`--zero-shot`): the untrained checkpoint of `model.arch` reranks
every fold's BM25 candidates → `runs/zero-shot/run.parquet` + `run.trec` (the `zero-shot`
reference row). Without `--zero-shot` it reranks with a method's saved fold models
(`models/<method>/`) again, outside DVC: `train@<method>` already writes its runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from pipeline import io, paths, schemas
from pipeline.models.base import Ranker
from pipeline.models.features import load_features
from pipeline.models.registry import build_ranker, load_ranker
from pipeline.params import ZERO_SHOT, get_method
from pipeline.rerank import write_method_runs
from stages.common import run_stage, setup
from stages.inputs import texts, torch_threads


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--zero-shot", action="store_true", help="the untrained model reranks")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True, extra=_args)
    params = ns.params
    torch_threads(params)
    if ns.zero_shot:
        method, models = ZERO_SHOT, None

        def load(seed: int, sub: str, fold: int) -> Ranker:
            return build_ranker(params.model, seed)
    else:
        get_method(params, ns.method)
        method, models = ns.method, paths.models(ns.method)

        def load(seed: int, sub: str, fold: int) -> Ranker:
            return load_ranker(paths.model(method, sub, fold))

    candidates = io.read_table(paths.CANDIDATES, schemas.CANDIDATES)
    transfer = io.read_table(paths.transfer_table("candidates"), schemas.CANDIDATES)
    features = load_features(paths.FEATURES)
    write_method_runs(params, method, load, candidates, texts(), features, models=models,
                      transfer=transfer)  # fmt: skip


if __name__ == "__main__":
    run_stage(main)
