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
    first_stage: pl.DataFrame | None = None  # shipped candidates (MS MARCO 215 set)
    alignments: pl.DataFrame | None = None  # group alignments (TREC Fair 2022)


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


def _msmarco(p: DatasetParams) -> Extracted:
    from pipeline.data.msmarco import MsmarcoConfig, msmarco_tables

    cfg = MsmarcoConfig(
        n_triples=p.n_triples,
        triples_sample=p.triples_sample,  # type: ignore[arg-type]
        seed=p.split_seed,
        query_set=p.query_set,  # type: ignore[arg-type]
        candidates=p.first_stage,  # type: ignore[arg-type]
        candidates_k=p.candidates_k,
        batch_size=p.batch_size,
    )
    t = msmarco_tables(cfg)
    return Extracted(
        t["corpus"], t["queries"], t["qrels"], t["triples"], first_stage=t["candidates"]
    )


def _trec_fair(p: DatasetParams) -> Extracted:
    from pipeline.data.trec_fair import TrecFairConfig, extract_trec_fair

    cfg = TrecFairConfig(
        dimensions=tuple(p.fair_dimensions),
        docs_per_query=p.docs_per_query,
        max_queries=p.max_queries,
        test_fraction=p.test_fraction,
        seed=p.split_seed,
        negatives=p.negatives,
    )
    d = extract_trec_fair(cfg)
    return Extracted(d.corpus, d.queries, d.qrels, d.triples, alignments=d.alignments)


SOURCES: dict[str, Callable[[DatasetParams], Extracted]] = {
    "grep-biasir": _grep_biasir,
    "msmarco-passage": _msmarco,
    "trec-fair-2022": _trec_fair,
}


def extract(p: DatasetParams) -> Extracted:
    if p.name not in SOURCES:
        raise ValueError(f"unknown dataset {p.name!r}; known: {sorted(SOURCES)}")
    return SOURCES[p.name](p)
