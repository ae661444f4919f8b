"""Stage `rerank@<method>`: each fold's model scores its fold's BM25 candidates → one run.

Writes `runs/<method>/run.parquet` and `run.trec`; with `train.seeds`, one `seed-<n>/` folder
of both per seed. `rerank@zero-shot` (`--zero-shot`) reranks with the untrained checkpoint of
`model.arch` (the `zero-shot` reference row).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from pipeline import io, schemas
from pipeline.models.features import load_features
from pipeline.models.registry import build_ranker, load_ranker
from pipeline.params import ZERO_SHOT, get_method
from pipeline.provenance import build_metadata
from pipeline.rerank import rerank_folds
from stages.common import run_stage, setup, texts, torch_threads

log = logging.getLogger("stages.rerank")


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--zero-shot", action="store_true", help="the untrained model reranks")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True, extra=_args)
    params = ns.params
    torch_threads(params)
    candidates = io.read_table("data/candidates.parquet", schemas.CANDIDATES)
    features = load_features("data/features.safetensors")
    if ns.zero_shot:
        ns.method, runs = ZERO_SHOT, [(params.train.seed, "")]
    else:
        get_method(params, ns.method)
        runs = params.train.seed_runs()
    for seed, sub in runs:
        if ns.zero_shot:
            load = lambda fold, s=seed: build_ranker(params.model, s)  # noqa: E731
        else:
            load = lambda fold, d=Path("models", ns.method, sub): load_ranker(d / f"fold-{fold}")  # noqa: E731
        run = rerank_folds(load, candidates, texts(), params.rerank.batch_size, features)
        out = Path("runs", ns.method, sub)
        io.write_table(run, str(out / "run.parquet"), schemas.RUN)
        meta = build_metadata(params, ns.method, seed=seed)
        io.write_trec_run(run, str(out / "run.trec"), tag=ns.method, metadata=meta)
        n_queries = run["query_id"].n_unique()
        log.info("rerank@%s: %s: %d queries, %d rows", ns.method, out, n_queries, run.height)


if __name__ == "__main__":
    run_stage(main)
