"""BM25 first-stage retrieval through bm25s (Lù 2024), the candidates every reranker reorders."""

from __future__ import annotations

import functools
import logging
import os
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, overload

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.progress import progress

if TYPE_CHECKING:  # imported where used: a module reading the data sources stays light
    import bm25s

log = logging.getLogger(__name__)
UNMATCHED_SHOWN = 5
"""How many of the queries that matched no document the warning names (then the count)."""


def tokenize(texts: list[str]) -> list[list[str]]:
    """The index builder's tokens of ``texts`` as strings (bm25s's English stop words,
    lowercase ``\\w\\w+``, no stemmer): what :func:`bm25_over_docs` indexes and matches."""
    from bm25s.tokenization import Tokenizer

    out = Tokenizer(stopwords="en").tokenize(texts, return_as="string", show_progress=False)
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


def _query_top_k(data, indices, indptr, terms, k, acc, seen, touched):  # pragma: no cover
    """The kernel behind SparseScorer.top_k (compiled by numba; see there)."""
    m = 0
    for t in terms:  # each term's postings, in the query's term order (bm25s's float32 sums)
        for j in range(indptr[t], indptr[t + 1]):
            d = indices[j]
            if not seen[d]:
                seen[d] = True
                touched[m] = d
                m += 1
            acc[d] += data[j]
    vals = np.empty(m, dtype=acc.dtype)
    n_pos = 0
    for i in range(m):
        d = touched[i]
        vals[i] = acc[d]
        acc[d] = 0
        seen[d] = False
        if vals[i] > 0:
            n_pos += 1
    kth = 0.0
    if n_pos > k:  # the k-th largest positive score (a min-heap of the k largest); all its
        heap = np.empty(k, dtype=acc.dtype)  # ties stay candidates
        size = 0
        for i in range(m):
            v = vals[i]
            if v <= 0 or (size == k and v <= heap[0]):
                continue
            if size < k:  # push: sift up
                j = size
                size += 1
                while j > 0 and heap[(j - 1) // 2] > v:
                    heap[j] = heap[(j - 1) // 2]
                    j = (j - 1) // 2
                heap[j] = v
            else:  # replace the smallest: sift down
                j = 0
                while True:
                    child = 2 * j + 1
                    if child >= k:
                        break
                    if child + 1 < k and heap[child + 1] < heap[child]:
                        child += 1
                    if heap[child] >= v:
                        break
                    heap[j] = heap[child]
                    j = child
                heap[j] = v
        kth = heap[0]
    docs = np.empty(m, dtype=np.int64)
    scores = np.empty(m, dtype=acc.dtype)
    c = 0
    for i in range(m):
        if vals[i] > 0 and vals[i] >= kth:
            docs[c] = touched[i]
            scores[c] = vals[i]
            c += 1
    docs, scores = docs[:c], scores[:c]
    by_doc = np.argsort(docs, kind="mergesort")
    docs, scores = docs[by_doc], scores[by_doc]
    by_score = np.argsort(-scores, kind="mergesort")  # stable: ties stay by index
    keep = by_score[: min(k, c)]
    return docs[keep], scores[keep]


@functools.cache
def _kernel() -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """``_query_top_k`` compiled by numba (imported here: the module stays light to import;
    compiled once per machine, cached beside this file)."""
    import numba

    return numba.njit(cache=True, nogil=True)(_query_top_k)


class SparseScorer:
    """BM25 top-k of queries from a bm25s index, scoring only the documents that hold a
    query term, on ``threads`` threads.

    ``bm25s.BM25.get_scores`` fills a dense array over the whole corpus with ``np.add.at`` and
    every query then scans it: about 15 ms a query over 3.6M passages, ≈ 1.8 h for the 400k
    training queries LWS reads at MS MARCO scale. This adds each term's postings into a
    reused float32 buffer in the query's term order, as bm25s does (the same float32 sums:
    the same scores, bit for bit), and selects the top k among the touched documents in a
    numba kernel that releases the GIL, so the queries run on every core. The order is
    :func:`top_k_order`'s: score descending, ties by document index, no score ≤ 0.
    """

    def __init__(self, retriever: bm25s.BM25, threads: int | None = None) -> None:
        self.retriever = retriever
        index = retriever.scores
        self.data, self.indices, self.indptr = index["data"], index["indices"], index["indptr"]
        self.n_docs = int(index["num_docs"])
        self.dtype = np.dtype(retriever.dtype)
        self.threads = max(1, threads or len(os.sched_getaffinity(0)))
        self._local = threading.local()

    def _buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This thread's score buffer, seen flags and touched list (clean between queries)."""
        if not hasattr(self._local, "buffers"):
            n = self.n_docs
            self._local.buffers = (np.zeros(n, self.dtype), np.zeros(n, np.bool_),
                                   np.zeros(n, np.int64))  # fmt: skip
        return self._local.buffers

    def top_k(self, tokens: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(document indices, float32 scores)`` of the ``k`` best positive scores of one
        tokenised query (unknown tokens are dropped; a repeated term counts twice)."""
        if k < 1:
            raise InputError(f"BM25 top-k: k must be at least 1; got {k}")
        terms = np.asarray(self.retriever.get_tokens_ids(tokens) if tokens else [], np.int64)
        return _kernel()(self.data, self.indices, self.indptr, terms, k, *self._buffers())

    def top_k_many(
        self, queries: Sequence[list[str]], k: int, desc: str = "BM25"
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """:meth:`top_k` of each query, in order, computed on ``self.threads`` threads."""
        _kernel()  # compile before the threads start
        bar = progress(total=len(queries), desc=desc, unit="query")
        chunk = 256
        with bar, ThreadPoolExecutor(self.threads) as pool:
            batches = (queries[i : i + chunk] for i in range(0, len(queries), chunk))
            for results in pool.map(lambda b: [self.top_k(q, k) for q in b], batches):
                bar.update(len(results))
                yield from results


def bm25_topk(
    corpus: pl.DataFrame, queries: pl.DataFrame, k: int, k1: float = 0.9, b: float = 0.4
) -> pl.DataFrame:
    """Top-`k` BM25 documents of `corpus` (doc_id, text) for each query (query_id, text).

    Returns `query_id, doc_id, rank, score` (rank 1 = best). Ties are broken by corpus order so
    the output is deterministic. A query whose terms match no document is returned with no
    rows and logged; the caller decides whether that is an error. The in-memory face of
    :func:`bm25_over_docs` (the one index builder).
    """
    if corpus.height == 0:
        raise InputError("BM25: the corpus is empty; check the extract stage's corpus.parquet")
    docs = corpus.select(pl.col("doc_id").cast(pl.Utf8), pl.col("text").fill_null(""))
    return bm25_over_docs(docs.iter_rows(), queries, min(k, corpus.height), k1, b,
                          total=corpus.height, quiet=True)  # fmt: skip


def top_k_frame(
    query_ids: Sequence[str],
    queries: Sequence[list[str]],
    scorer: SparseScorer,
    doc_ids: pl.Series,
    k: int,
) -> pl.DataFrame:
    """``query_id, doc_id, rank, score`` of each tokenised query's top ``k`` (rank 1 = best;
    ``doc_ids``: the index's document ids in index order); a query that matches no document
    has no rows (logged). Ids are gathered by integer index (no Python object per row: 400k
    training queries × 100 candidates are 40M rows)."""
    tops = list(scorer.top_k_many(queries, k))
    sizes = np.fromiter((top.size for top, _ in tops), dtype=np.int64, count=len(tops))
    empty = [str(query_ids[int(i)]) for i in np.flatnonzero(sizes == 0)]
    if empty:
        shown = ", ".join(repr(q) for q in empty[:UNMATCHED_SHOWN])
        more = f" (+{len(empty) - UNMATCHED_SHOWN} more)" if len(empty) > UNMATCHED_SHOWN else ""
        log.warning("BM25: %d of %d queries matched no document (no word of theirs is in the "
                    "collection, or only stop words): query_id %s%s", len(empty),
                    len(query_ids), shown, more)  # fmt: skip
    starts = np.cumsum(sizes) - sizes
    rows = np.arange(int(sizes.sum()), dtype=np.int64)
    return pl.DataFrame(
        {
            "query_id": pl.Series(query_ids, dtype=pl.Utf8).gather(
                np.repeat(np.arange(sizes.size), sizes)
            ),
            "doc_id": doc_ids.cast(pl.Utf8).gather(np.concatenate([t for t, _ in tops] or [rows])),
            "rank": rows - np.repeat(starts, sizes) + 1,
            "score": np.concatenate([v for _, v in tops] or [rows]).astype(np.float64),
        }
    )


class PackedDocs(Sequence[list[int]]):
    """Token ids of many documents in one int32 array with end offsets; reads as a sequence
    of Python lists (one built on demand per access), which is what bm25s iterates."""

    def __init__(self) -> None:
        self._buf = array("i")
        self._ends = array("q")
        self._flat = np.zeros(0, dtype=np.int32)

    def append(self, ids: Sequence[int]) -> None:
        self._buf.extend(ids)
        self._ends.append(len(self._buf))

    def freeze(self) -> PackedDocs:
        """Stop appending; reading starts (the buffer is shared, not copied)."""
        self._flat = np.frombuffer(self._buf, dtype=np.int32) if self._buf else self._flat
        return self

    def __len__(self) -> int:
        return len(self._ends)

    def _span(self, i: int) -> tuple[int, int]:
        return (self._ends[i - 1] if i else 0), self._ends[i]

    @overload
    def __getitem__(self, i: int) -> list[int]: ...
    @overload
    def __getitem__(self, i: slice) -> list[list[int]]: ...
    def __getitem__(self, i: int | slice) -> list[int] | list[list[int]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        start, end = self._span(i)
        out: list[int] = self._flat[start:end].tolist()
        return out

    def __iter__(self) -> Iterator[list[int]]:
        start = 0
        for end in self._ends:
            yield self._flat[start:end].tolist()
            start = end


def bm25_over_docs(
    docs: Iterable[tuple[str, str]],
    queries: pl.DataFrame,
    k: int,
    k1: float = 0.9,
    b: float = 0.4,
    total: int | None = None,
    quiet: bool = False,
) -> pl.DataFrame:
    """Top-`k` bm25s documents per query of a streamed collection `(doc_id, text)`:
    `query_id, doc_id, rank, score`, ties in collection order, no rows for a query matching
    nothing. The project's one BM25 index builder (the candidates, Grep-BiasIR's sampled
    negatives, the transfer collection, MS MARCO): tokens are bm25s's English stop words,
    lowercase `\\w\\w+`, no stemmer (as Anserini's default analyser, the papers' BM25 runs
    differ anyway: README). Texts are never held; token ids are packed into one int32 array
    (:class:`PackedDocs`: 4 bytes a token; Python int lists took ~2 KB a passage, ~18 GB for
    MS MARCO's 8.8M). ``quiet``: no progress bar (a small in-memory corpus).
    """
    import bm25s
    from bm25s.tokenization import Tokenizer

    tokenizer = Tokenizer(stopwords="en")
    doc_ids: list[str] = []

    def texts() -> Iterator[str]:
        for doc_id, text in progress(
            docs, total=total, desc="bm25 index", unit="doc", mininterval=5, disable=quiet
        ):
            doc_ids.append(doc_id)
            yield text or ""

    packed = PackedDocs()
    for ids in tokenizer.tokenize(texts(), return_as="stream"):
        packed.append(ids)
    tokens = tokenizer.to_tokenized_tuple(packed.freeze())
    if not doc_ids:
        raise InputError("BM25: the collection is empty; expected at least one document")
    retriever = bm25s.BM25(k1=k1, b=b)
    retriever.index(tokens, show_progress=False)
    qtok = tokenizer.tokenize(
        queries["text"].to_list(), update_vocab=False, return_as="string", show_progress=False
    )
    # unknown words (bm25s maps them to '') are dropped first
    words = [[w for w in ws if w] for ws in qtok]
    qids = [str(q) for q in queries["query_id"]]
    return top_k_frame(qids, words, SparseScorer(retriever), pl.Series(doc_ids), k)
