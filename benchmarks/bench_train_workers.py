"""Training a method's fold models: side by side in worker processes vs one process.

Times `pipeline.train.method.train_method` for one method (default `baseline`) on the default
pipeline's own data (run `dvc repro` up to `features` and `order` first), one seed, every fold:
ours with ``train.workers`` processes of ``train.threads`` torch threads
(``--workers 2 --threads 1``: the default), naive with one process of all the cores' threads
(``--workers 1 --threads 2``). Models go to a temporary folder; the ratio is naive / ours.

    python -m benchmarks.bench_train_workers [--method baseline] [--repeats 1]
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
from pathlib import Path

import torch

from benchmarks.common import parser, report, setup_logging, timed, write_row
from pipeline import io, schemas
from pipeline.models.features import load_features
from pipeline.params import Params, load_params
from pipeline.train.method import train_method
from stages.inputs import texts

log = logging.getLogger("benchmarks.train_workers")


def _with(params: Params, seed: int, workers: int, threads: int) -> Params:
    train = dataclasses.replace(params.train, seeds=[seed], workers=workers, threads=threads,
                                checkpoint_every=None)  # fmt: skip
    return dataclasses.replace(params, train=train)


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--method", default="baseline")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(repeats=1)
    args = p.parse_args()
    setup_logging()
    logging.getLogger("pipeline").setLevel(logging.WARNING)
    params = load_params()
    ordered = io.read_table(f"data/order/{args.method}.parquet", schemas.ORDERED_TRIPLES)
    seed = int(ordered["seed"].cast(int).min())  # type: ignore[arg-type]
    first = ordered.filter(ordered["seed"] == seed)
    doc_scores = io.read_table("data/doc_scores.parquet", schemas.DOC_SCORES)
    features, text = load_features("data/features.safetensors"), texts()
    cores = os.cpu_count() or 1

    def side(workers: int, threads: int) -> None:
        torch.set_num_threads(threads)
        with tempfile.TemporaryDirectory() as out:
            train_method(_with(params, seed, workers, threads), args.method, first, text,
                         doc_scores, Path(out), features)  # fmt: skip

    ours, naive = [], []
    for _ in range(args.repeats):
        ours.append(timed(lambda: side(args.workers, args.threads))[0])
        naive.append(timed(lambda: side(1, cores))[0])
    row = report(f"train@{args.method} fold models", "s", ours, naive, higher=False)
    row.update(method=args.method, models=first["fold"].n_unique() if "fold" in first.columns
               else None, ours_cfg=f"{args.workers} workers x {args.threads} thread(s)",
               naive_cfg=f"1 process x {cores} threads")  # fmt: skip
    write_row("train_workers", row, args.out)


if __name__ == "__main__":
    main()
