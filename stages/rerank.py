"""Stage `rerank@<method>`: the method's model scores the BM25 candidates → run."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, schemas
from pipeline.rerank import rerank
from pipeline.train.model import load_trained
from stages.common import run_stage, setup, torch_threads

log = logging.getLogger("stages.rerank")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    params = ns.params
    torch_threads(params)
    tokenizer, model = load_trained(f"models/{ns.method}")
    candidates = io.read_table("data/candidates.parquet", schemas.CANDIDATES)
    corpus = io.read_table("data/corpus.parquet", schemas.CORPUS)
    queries = io.read_table("data/queries.parquet", schemas.QUERIES)
    run = rerank(
        model,
        tokenizer,
        candidates,
        dict(zip(queries["query_id"], queries["text"], strict=True)),
        dict(zip(corpus["doc_id"], corpus["text"], strict=True)),
        batch_size=params.rerank.batch_size,
        max_len=params.model.max_len,
        q_len=params.model.q_len,
        device=params.train.device,
    )
    io.write_table(run, f"runs/{ns.method}.parquet", schemas.RUN)
    io.write_trec_run(run, f"runs/{ns.method}.trec", tag=ns.method)
    log.info("rerank@%s: %d queries, %d rows", ns.method, run["query_id"].n_unique(), run.height)


if __name__ == "__main__":
    run_stage(main)
