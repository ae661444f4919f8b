"""Data sources: a registry keyed by `dataset.name`, each producing the four extract tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from pipeline.params import DatasetParams


@dataclass(frozen=True)
class Extracted:
    """The extract stage's tables (see DESIGN §3)."""

    corpus: pl.DataFrame
    queries: pl.DataFrame
    qrels: pl.DataFrame
    triples: pl.DataFrame


def _grep_biasir(p: DatasetParams) -> Extracted:
    from pipeline.data.grep_biasir import (
        load_grep_biasir,
        make_triples,
        split_documents,
        split_queries,
        subset_queries,
    )

    data = load_grep_biasir()
    if p.max_queries is not None:
        data = subset_queries(data, p.max_queries)
    queries = split_queries(data.queries, p.test_fraction, p.split_seed)
    queries = queries.with_columns(pl.lit("grep-biasir").alias("set"))
    corpus = split_documents(data, queries)
    train_ids = queries.filter(pl.col("split") == "train")["query_id"].to_list()
    triples = make_triples(data, train_ids, p.bm25_negatives, p.bm25_pool, p.split_seed)
    return Extracted(corpus, queries, data.qrels, triples)


SOURCES: dict[str, Callable[[DatasetParams], Extracted]] = {
    "grep-biasir": _grep_biasir,
}


def extract(p: DatasetParams) -> Extracted:
    if p.name not in SOURCES:
        raise ValueError(f"unknown dataset {p.name!r}; known: {sorted(SOURCES)}")
    return SOURCES[p.name](p)
