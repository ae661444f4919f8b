"""Data sources: a registry keyed by `dataset.name`, each producing the four extract tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

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
        assign_folds,
        load_grep_biasir,
        make_triples,
        split_documents,
        split_queries,
        subset_queries,
    )

    data = load_grep_biasir()
    if p.max_queries is not None:
        data = subset_queries(data, p.max_queries)
    if p.folds > 1:
        queries = assign_folds(data.queries, p.folds, p.split_seed)
    else:
        queries = split_queries(data.queries, p.test_fraction, p.split_seed)
        test = pl.col("split") == "test"
        queries = queries.with_columns(pl.when(test).then(0).otherwise(None).alias("fold"))
    queries = queries.with_columns(pl.lit("grep-biasir").alias("set"))
    corpus = split_documents(data, queries)
    parts = []
    for fold in range(max(p.folds, 1)):
        train = queries.filter(pl.col("fold").ne_missing(fold))["query_id"].to_list()
        t = make_triples(data, train, p.bm25_negatives, p.bm25_pool)
        parts.append(t.with_columns(pl.lit(fold, dtype=pl.Int64).alias("fold")))
    return Extracted(corpus, queries, data.qrels, pl.concat(parts))


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
    """The source's tables; sources without folds get one (``fold`` 0 = the test queries)."""
    if p.name not in SOURCES:
        raise ValueError(f"unknown dataset {p.name!r}; known: {sorted(SOURCES)}")
    if p.folds > 1 and p.name != "grep-biasir":
        raise ValueError(
            f"params key 'dataset.folds': k-fold cross-validation is for grep-biasir; "
            f"{p.name} has its own test queries, set dataset.folds: 1"
        )
    out = SOURCES[p.name](p)
    if "fold" in out.queries.columns:
        return out
    test = pl.col("split") == "test"
    queries = out.queries.with_columns(pl.when(test).then(0).otherwise(None).alias("fold"))
    triples = out.triples.with_columns(pl.lit(0, dtype=pl.Int64).alias("fold"))
    return replace(out, queries=queries.cast({"fold": pl.Int64}), triples=triples)
