"""Stage `candidates`: BM25 top-k over the corpus for the test queries."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl

from pipeline import io, schemas
from pipeline.retrieval.bm25 import bm25_topk
from stages.common import run_stage, setup

log = logging.getLogger("stages.candidates")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    p = ns.params.candidates
    corpus = io.read_table("data/corpus.parquet", schemas.CORPUS)
    queries = io.read_table("data/queries.parquet", schemas.QUERIES).filter(
        pl.col("split") == "test"
    )
    if queries.height == 0:
        raise ValueError("data/queries.parquet has no test queries; raise dataset.test_fraction")
    if "split" in corpus.columns:
        # Sources that split documents with their queries (Grep-BiasIR): test queries rerank
        # test documents only, so training documents cannot leak into evaluation.
        corpus = corpus.filter(pl.col("split") == "test")
    cands = bm25_topk(corpus, queries, k=p.top_k, k1=p.k1, b=p.b)
    missing = sorted(set(queries["query_id"]) - set(cands["query_id"]))
    if missing:
        raise ValueError(
            f"BM25 found no candidate for {len(missing)} test queries, first {missing[0]!r}: "
            "its terms match no document. Remove the query or fix its text."
        )
    io.write_table(cands, "data/candidates.parquet", schemas.CANDIDATES)
    log.info("candidates: %d queries, %d rows (top_k %d)", queries.height, cands.height, p.top_k)


if __name__ == "__main__":
    run_stage(main)
