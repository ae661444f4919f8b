"""Stage `candidates`: per fold, BM25 top-k for the fold's test queries (reranked and
evaluated; column `fold`) and for its training queries (read by the LWS ordering); with
several fold assignments (`data/folds.parquet`), those of each (column `assignment`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, paths, schemas
from pipeline.retrieval.folds import candidates
from stages.common import run_stage, setup

log = logging.getLogger("stages.candidates")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    p = ns.params.candidates
    corpus = io.read_table(paths.CORPUS, schemas.CORPUS)
    queries = io.read_table(paths.QUERIES, schemas.QUERIES)
    first = io.read_table(paths.FIRST_STAGE, schemas.CANDIDATES)
    qrels = io.read_table(paths.QRELS, schemas.QRELS)
    assignments = io.read_table(paths.FOLDS, schemas.FOLDS)  # several: dataset.*.splits
    test, train = candidates(corpus, queries, first, p, qrels, assignments)
    io.write_table(test, paths.CANDIDATES, schemas.CANDIDATES)
    io.write_table(train, paths.TRAIN_CANDIDATES, schemas.CANDIDATES)
    folds = queries["fold"].drop_nulls().n_unique()
    log.info("candidates: %d test / %d train rows over %d fold(s), top_k %d",
             test.height, train.height, folds, p.top_k)  # fmt: skip


if __name__ == "__main__":
    run_stage(main)
