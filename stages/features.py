"""Stage `features`: the frozen bottom layers' states of every query and document text.

With `model.train_layers` set, the layers below the trained ones never change, so their
states are computed once here (length-sorted batches) and every train/rerank stage loads
them instead of recomputing them (pipeline.models.base). Families that encode each text on
its own (a family record's `per_text`: bi_encoder, late_interaction) use them; for the
cross-encoder (a sequence per query–document pair) and without `train_layers` the file
holds no states.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import paths
from pipeline.models.features import save_features
from pipeline.models.registry import build_ranker, get_family
from stages.common import run_stage, setup, texts, torch_threads

log = logging.getLogger("stages.features")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    params = ns.params
    torch_threads(params)
    queries, docs = texts()
    ranker = build_ranker(params.model, params.train.seed)
    if get_family(params.model.arch).per_text:
        ranker.bind(queries, docs)
        ranker.warm(list(queries), list(docs))
    save_features(ranker.features(), paths.FEATURES)
    log.info("features: frozen-bottom states of %d texts", len(ranker.features()))


if __name__ == "__main__":
    run_stage(main)
