"""BM25 top-k per query: postings-only scoring (ours) vs bm25s's dense scores (naive).

The candidates stage scores every training query that LWS reads (≈ 400k at MS MARCO scale)
against the extracted corpus. Ours is ``pipeline.retrieval.bm25.SparseScorer``: each query
term's postings are added into one reused buffer and only the touched documents are read
back and ranked, in a numba kernel, on every core (and on one, reported too). Naive is what
the stage did before: ``bm25s.BM25.get_scores`` (a dense array over the whole corpus) and
``top_k_order`` over it. Both sides run on the same index and
queries, and every query's top-k must be identical (documents, order and float32 scores).
The corpus and queries are drawn from the rehearsal's text model (Zipf vocabulary of 1M
words, passage lengths log-normal with median 55 words, queries of 3–12 content words).

    python -m benchmarks.bench_bm25 [--passages 1000000] [--queries 2000] [--k 100] [--repeats 3]
"""

from __future__ import annotations

import logging
import statistics
import time

import bm25s
import numpy as np

from benchmarks.common import parser, peak_rss_mib, report, setup_logging, write_row
from benchmarks.rehearsal.generate import GenConfig, passage_lengths, text_model
from pipeline.retrieval.bm25 import SparseScorer, tokenize, top_k_order

log = logging.getLogger("benchmarks.bm25")


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--passages", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--k", type=int, default=100, help="candidates per query")
    args = p.parse_args()
    setup_logging()
    cfg = GenConfig(passages=args.passages)
    model, rng = text_model(cfg), np.random.default_rng(cfg.seed)
    texts, _ = model.draw(rng, passage_lengths(rng, args.passages, cfg))
    queries = tokenize(model.draw_queries(rng, args.queries).to_list())
    start = time.perf_counter()
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(tokenize(texts.to_list()), show_progress=False)
    del texts
    log.info("index of %d passages: %.1f s", args.passages, time.perf_counter() - start)
    scorer = SparseScorer(retriever)
    single = SparseScorer(retriever, threads=1)

    def ours() -> list[tuple[np.ndarray, np.ndarray]]:
        return list(scorer.top_k_many(queries, args.k))

    def ours_1() -> list[tuple[np.ndarray, np.ndarray]]:
        return list(single.top_k_many(queries, args.k))

    def naive() -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for q in queries:
            scores = retriever.get_scores(q) if q else np.zeros(args.passages, np.float32)
            order = top_k_order(scores, args.k)
            out.append((order, scores[order]))
        return out

    times: dict[str, list[float]] = {"ours": [], "ours_1_thread": [], "naive": []}
    results = {}
    ours()  # numba compiles (or loads its cache) once
    for _ in range(args.repeats):
        for name, fn in (("ours", ours), ("ours_1_thread", ours_1), ("naive", naive)):
            start = time.perf_counter()
            results[name] = fn()
            times[name].append((time.perf_counter() - start) / len(queries) * 1000)
    same = all(
        np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        for side in ("ours", "ours_1_thread")
        for a, b in zip(results[side], results["naive"], strict=True)
    )
    if not same:
        raise SystemExit("ours and naive disagree on some query's top-k")
    postings = [sum(int(np.diff(scorer.indptr[[t, t + 1]])[0])
                    for t in retriever.get_tokens_ids(q)) for q in queries]  # fmt: skip
    row = report("bm25 top-k", "ms/query", times["ours"], times["naive"], higher=False)
    one = statistics.median(times["ours_1_thread"])
    row.update(passages=args.passages, queries=args.queries, k=args.k, identical=same,
               threads=scorer.threads, ours_1_thread_median=one,
               speedup_1_thread=row["naive_median"] / one,
               median_postings=float(np.median(postings)), runs=times,
               peak_rss_mib=round(peak_rss_mib()))  # fmt: skip
    write_row("bm25", row)


if __name__ == "__main__":
    main()
