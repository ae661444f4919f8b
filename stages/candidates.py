"""Stage `candidates`: BM25 top-k for the test queries (reranked and evaluated) and for the
training queries (read by the LWS ordering)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl

from pipeline import io, schemas
from pipeline.params import CandidatesParams
from pipeline.retrieval.bm25 import bm25_topk
from stages.common import run_stage, setup

log = logging.getLogger("stages.candidates")


def split_candidates(
    corpus: pl.DataFrame, queries: pl.DataFrame, split: str, p: CandidatesParams
) -> pl.DataFrame:
    """BM25 top-k for the queries of `split` over that split's documents (when the source
    splits documents with their queries, as Grep-BiasIR does: no leak across splits)."""
    queries = queries.filter(pl.col("split") == split)
    if queries.height == 0:
        raise ValueError(
            f"data/queries.parquet has no {split} queries; adjust dataset.test_fraction"
        )
    if "split" in corpus.columns:
        corpus = corpus.filter(pl.col("split") == split)
    cands = bm25_topk(corpus, queries, k=p.top_k, k1=p.k1, b=p.b)
    missing = sorted(set(queries["query_id"]) - set(cands["query_id"]))
    if missing and split == "test":
        raise ValueError(
            f"BM25 found no candidate for {len(missing)} test queries, first {missing[0]!r}: "
            "its terms match no document. Remove the query or fix its text."
        )
    return cands


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    p = ns.params.candidates
    corpus = io.read_table("data/corpus.parquet", schemas.CORPUS)
    queries = io.read_table("data/queries.parquet", schemas.QUERIES)
    first = io.read_table("data/first_stage.parquet", schemas.CANDIDATES)
    if first.height:
        # The source ships its first-stage run (MS MARCO 215 set: BM25 top-200): rerank it.
        test = first.filter(pl.col("rank") <= p.top_k)
    else:
        test = split_candidates(corpus, queries, "test", p)
    train = split_candidates(corpus, queries, "train", p)
    io.write_table(test, "data/candidates.parquet", schemas.CANDIDATES)
    io.write_table(train, "data/train_candidates.parquet", schemas.CANDIDATES)
    log.info("candidates: %d test / %d train rows (top_k %d)", test.height, train.height, p.top_k)


if __name__ == "__main__":
    run_stage(main)
