"""Nested selection of the training recipe on the training folds (a command, not a stage):
per outer fold, every grid point trains `--method` on an inner split of the fold's training
queries, scored on the inner held-out ones; test queries are never read (pipeline/train/
select.py). Reads data/ (`dvc repro features` first); writes `<out>/scores.csv` (every outer
fold, point and seed), `<out>/choices.csv` (each outer fold's choice, whether params uses it).

    python -m stages.select_recipe --grid train.lr=1e-4,2e-4,4e-4 \\
        --grid model.bi_encoder.temperature=0.25,0.5,1.0 --out selection
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from pipeline import io, paths, schemas
from pipeline.metrics.runner import read_shared
from pipeline.models.features import load_features
from pipeline.train.select import Tables, parse_grid, select
from stages.common import run_stage, setup
from stages.inputs import texts, torch_threads

log = logging.getLogger("stages.select_recipe")
GRID = ["train.lr=1.0e-4,2.0e-4,4.0e-4", "model.bi_encoder.temperature=0.25,0.5,1.0"]


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--grid", action="append", help=f"key=v1,v2,... (default {GRID})")
    parser.add_argument("--method", default="baseline", help="the method trained (baseline)")
    parser.add_argument("--criterion", default="MRR@10", help="inner validation metric to max")
    parser.add_argument("--inner-folds", type=int, default=2, help="inner folds (2)")
    parser.add_argument("--out", default="selection", help="output folder (selection/)")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, extra=_args)
    torch_threads(ns.params)
    shared = read_shared()
    read = [io.read_table(p, s) for p, s in ((paths.QUERIES, schemas.QUERIES),
                                              (paths.CORPUS, schemas.CORPUS),
                                              (paths.TRIPLES, schemas.TRIPLES))]  # fmt: skip
    tables = Tables(read[0], read[1], shared.qrels, read[2], shared.doc_scores, shared.groups,
                    texts(transfer=False), load_features(paths.FEATURES))  # fmt: skip
    grid = parse_grid(ns.grid or GRID)
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    scores, choices = select(ns.params, tables, grid, method=ns.method, criterion=ns.criterion,
                             inner_folds=ns.inner_folds, work_root=out)  # fmt: skip
    io.write_text(scores.write_csv(float_precision=6), out / "scores.csv")
    io.write_text(choices.write_csv(float_precision=6), out / "choices.csv")
    for row in choices.iter_rows(named=True):
        log.info("outer fold %d: %s (%s %.4f ± %.4f over %d seeds); params.yaml's: %s",
                 row["outer_fold"], {k: row[k] for k in grid}, ns.criterion, row["score"],
                 row["seed_std"] or 0.0, row["seeds"], row["is_current"])  # fmt: skip


if __name__ == "__main__":
    run_stage(main)
