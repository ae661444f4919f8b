"""BM25 first-stage retrieval through bm25s (Lù 2024), the candidates every reranker reorders."""

from __future__ import annotations

import logging

import bm25s
import numpy as np
import polars as pl

log = logging.getLogger(__name__)


def _tokenize(texts: list[str]) -> list[list[str]]:
    # English stop words ship inside bm25s (no download); no stemmer, as in Anserini's
    # default analyser the papers' BM25 runs differ anyway (documented in the README).
    out = bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)
    assert isinstance(out, list)
    return out


def top_k_order(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest positive ``scores``: score descending, ties by index.

    Equal to ``np.lexsort((np.arange(n), -scores))[:k]`` with the non-positive scores dropped,
    without sorting all ``n`` scores: only the positive ones at or above the k-th largest are
    sorted (a full sort per query cost 0.5 s over 8.8M passages, this about 0.05 s).
    """
    idx = np.flatnonzero(scores > 0)
    if idx.size > k:
        kth = np.partition(scores[idx], idx.size - k)[idx.size - k]  # the k-th largest
        idx = idx[scores[idx] >= kth]  # every tie of the k-th value stays a candidate
    return idx[np.lexsort((idx, -scores[idx]))][:k]


def bm25_topk(
    corpus: pl.DataFrame, queries: pl.DataFrame, k: int, k1: float = 0.9, b: float = 0.4
) -> pl.DataFrame:
    """Top-`k` BM25 documents of `corpus` (doc_id, text) for each query (query_id, text).

    Returns `query_id, doc_id, rank, score` (rank 1 = best). Ties are broken by corpus order so
    the output is deterministic. A query whose terms match no document is returned with no
    rows and logged; the caller decides whether that is an error.
    """
    if corpus.height == 0:
        raise ValueError("BM25: the corpus is empty; check the extract stage's corpus.parquet")
    k = min(k, corpus.height)
    retriever = bm25s.BM25(k1=k1, b=b)
    retriever.index(_tokenize(corpus["text"].fill_null("").to_list()), show_progress=False)
    doc_ids = corpus["doc_id"].to_numpy()
    frames = []
    empty = 0
    for qid, tokens in zip(queries["query_id"], _tokenize(queries["text"].to_list()), strict=True):
        scores = retriever.get_scores(tokens) if tokens else np.zeros(corpus.height)
        order = top_k_order(scores, k)
        if order.size == 0:
            empty += 1
            continue
        frames.append(
            pl.DataFrame(
                {
                    "query_id": [qid] * order.size,
                    "doc_id": doc_ids[order],
                    "rank": np.arange(1, order.size + 1, dtype=np.int64),
                    "score": scores[order].astype(np.float64),
                }
            )
        )
    if empty:
        log.warning("BM25: %d of %d queries matched no document", empty, queries.height)
    schema = {"query_id": pl.Utf8, "doc_id": pl.Utf8, "rank": pl.Int64, "score": pl.Float64}
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)
