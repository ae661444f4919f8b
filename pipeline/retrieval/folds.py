"""BM25 candidates per fold (SPEC §7): each fold's test queries (reranked and evaluated) and
its training queries (read by the LWS ordering), without leaking documents across the split."""

from __future__ import annotations

import logging

import polars as pl

from pipeline.errors import InputError
from pipeline.params import CandidatesParams
from pipeline.retrieval.bm25 import bm25_topk

log = logging.getLogger(__name__)


def fold_candidates(
    corpus: pl.DataFrame,
    queries: pl.DataFrame,
    fold: int,
    test: bool,
    p: CandidatesParams,
    k: int | None = None,
) -> pl.DataFrame:
    """BM25 top-k of fold ``fold``: its test queries (``test``) or its training queries, over
    the documents of the same side when the source splits documents with their queries (as
    Grep-BiasIR does: no leak across the split). ``k``: candidates per query (``p.top_k``)."""
    in_fold = pl.col("fold").eq_missing(fold)
    queries = queries.filter(in_fold if test else ~in_fold)
    if "fold" in corpus.columns:
        corpus = corpus.filter(
            pl.col("fold").eq_missing(fold) if test else ~pl.col("fold").eq_missing(fold)
        )
    if queries.height == 0 or corpus.height == 0:
        raise InputError(
            f"fold {fold} has no {'test' if test else 'training'} queries or documents; "
            "adjust dataset.grep_biasir.folds / test_fraction"
        )
    cands = bm25_topk(corpus, queries, k=p.top_k if k is None else k, k1=p.k1, b=p.b)
    missing = sorted(set(queries["query_id"]) - set(cands["query_id"]))
    if missing and test:
        # Every query is evaluated (SPEC §7): a query whose terms match no document (e.g.
        # Grep-BiasIR's "summerstyle 2021") gets the side's first top_k documents, all tied
        # at score 0, which the reranker orders and the tie-aware metrics handle.
        log.warning("fold %d: BM25 matched no document for %d test queries (%s); they get "
                    "%d tied candidates at score 0", fold, len(missing), ", ".join(missing),
                    min(p.top_k, corpus.height))  # fmt: skip
        docs = corpus["doc_id"].head(p.top_k)
        tied = pl.DataFrame({"query_id": missing}).join(pl.DataFrame({"doc_id": docs}), how="cross")
        tied = tied.with_columns(
            (pl.int_range(pl.len()).over("query_id") + 1).cast(pl.Int64).alias("rank"),
            pl.lit(0.0).alias("score"),
        )
        cands = pl.concat([cands, tied.select(cands.columns)])
    return cands.with_columns(pl.lit(fold, dtype=pl.Int64).alias("fold"))


def candidates(
    corpus: pl.DataFrame, queries: pl.DataFrame, first_stage: pl.DataFrame, p: CandidatesParams
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(test candidates, training candidates)`` over every fold of ``queries``. A source
    that ships its first-stage run (MS MARCO 215 set: BM25 top-200) has its top ``p.top_k``
    reranked instead of BM25's (as fold 0). Training candidates: ``p.train_top_k`` per query
    (``None``: ``p.top_k``; ``0``: an empty table, for runs without the ``lws`` ordering)."""
    folds = sorted(queries["fold"].drop_nulls().unique().to_list())
    if first_stage.height:
        fold = pl.lit(0, dtype=pl.Int64).alias("fold")
        test = first_stage.filter(pl.col("rank") <= p.top_k).with_columns(fold)
    else:
        test = pl.concat([fold_candidates(corpus, queries, f, True, p) for f in folds])
    k = p.top_k if p.train_top_k is None else p.train_top_k
    if k == 0:
        return test, test.clear()
    train = pl.concat([fold_candidates(corpus, queries, f, False, p, k) for f in folds])
    return test, train
