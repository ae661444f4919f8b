"""Stage `features`: the frozen bottom layers' states of every query and document text.

With `model.train_layers` set, the layers below the trained ones never change, so their
states are computed once here (length-sorted batches) and every train/rerank stage loads
them instead of recomputing them (pipeline.models.base). Families that encode each text on
its own (a family record's `per_text`: bi_encoder, late_interaction) use them; for the
cross-encoder (a sequence per query–document pair) and without `train_layers` the file
holds no states. The batches are spread over `train.workers` processes (this one and the
others it starts), each computed as one process alone computes it: the states do not depend
on the number of workers (which is why `train.workers` is not among the stage's params).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import paths
from pipeline.models.features import compute_features, save_features
from pipeline.train.jobs import run_jobs
from stages.common import run_stage, setup
from stages.inputs import texts, torch_threads

log = logging.getLogger("stages.features")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    params = ns.params
    torch_threads(params)
    with ns.clock("states"):  # the batches spread over train.workers processes, as training
        t = params.train
        features = compute_features(params.model, t.seed, texts(), t.workers, t.threads, run_jobs)
    save_features(features, paths.FEATURES)
    log.info("features: frozen-bottom states of %d texts", len(features))


if __name__ == "__main__":
    run_stage(main)
