"""Stage `train@<method>`: one ranker of `model.arch` per fold (and seed) on the method's
ordered triples and loss → `models/<method>/[seed-<n>/]fold-<k>/` (pipeline.train.method)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from pipeline import io, schemas
from pipeline.params import get_method
from pipeline.train import distributed
from pipeline.train.method import train_method
from stages.common import run_stage, setup, texts, torch_threads

log = logging.getLogger("stages.train")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    get_method(ns.params, ns.method)
    torch_threads(ns.params)
    ordered = io.read_table(f"data/order/{ns.method}.parquet", schemas.ORDERED_TRIPLES)
    doc_scores = io.read_table("data/doc_scores.parquet", schemas.DOC_SCORES)
    curve = train_method(
        ns.params, ns.method, ordered, texts(), doc_scores, Path("models", ns.method)
    )
    if not distributed.is_main():  # under torchrun, rank 0 alone writes the outputs
        return
    io.write_text(curve.write_csv(), f"plots/train/{ns.method}.csv")
    log.info(
        "train@%s: %d logged steps, final loss %.4f", ns.method, curve.height, curve["loss"][-1]
    )


if __name__ == "__main__":
    run_stage(main)
