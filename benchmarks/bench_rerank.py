"""Reranking throughput (pairs/s): ``pipeline.rerank.rerank`` vs a naive loop, per family.

Ours: the family shares work between candidates (the bi-encoder and late interaction encode
each distinct query and document once, in length-sorted batches; the cross-encoder encodes
each distinct pair once), under inference mode. Naive (``benchmarks.naive_ranker``): every
candidate pair encoded for itself in candidate order, tokenised per batch and padded to
max_len, under ``no_grad``. Candidates are drawn from a pool of ``--docs`` documents, so a
document is a candidate of several queries (Grep-BiasIR: 819 distinct texts behind every
query's BM25 top 50). Same model (all-MiniLM-L6-v2, 6 layers unless ``--layers``), batch 64,
MS MARCO-like passage lengths. Both sides' scores are compared (max absolute difference
reported) before timing, and the encoder sequences each side runs are counted.

    python -m benchmarks.bench_rerank [--arch bi_encoder] [--queries 10] [--depth 100]
"""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import torch

from benchmarks.common import parser, report, setup_logging, timed, write_row
from benchmarks.naive_ranker import naive_rerank, sequences_per_pair
from benchmarks.synthetic import passages, queries, vocabulary
from pipeline.models import family_names
from pipeline.models.registry import build_ranker, model_params
from pipeline.rerank import rerank

log = logging.getLogger("benchmarks.rerank")


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--arch", default="bi_encoder", choices=family_names())
    p.add_argument("--queries", type=int, default=10)
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--docs", type=int, default=300, help="distinct documents in the pool")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--max-len", type=int, default=256)
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    setup_logging()
    logging.getLogger("pipeline").setLevel(logging.WARNING)
    cfg = model_params(args.arch, name="all-MiniLM-L6-v2", n_layers=args.layers,
                      max_len=args.max_len, q_len=32)  # fmt: skip
    ranker = build_ranker(cfg, seed=0).to(args.device).eval()
    vocab = vocabulary(ranker.tokenizer)
    qmap = {f"q{i}": t for i, t in enumerate(queries(vocab, args.queries, seed=1))}
    dmap = {f"d{i}": t for i, t in enumerate(passages(vocab, args.docs, seed=2))}
    rng = np.random.default_rng(3)
    depth = min(args.depth, args.docs)
    dids = [f"d{j}" for _ in qmap for j in rng.choice(args.docs, size=depth, replace=False)]
    qids = [q for q in qmap for _ in range(depth)]
    n = len(qids)
    cands = pl.DataFrame(
        {
            "query_id": qids,
            "doc_id": dids,
            "rank": [i % depth + 1 for i in range(n)],
            "score": [0.0] * n,
        }
    )
    pairs = [(qmap[q], dmap[d]) for q, d in zip(qids, dids, strict=True)]
    ranker.bind(qmap, dmap)

    def ours() -> pl.DataFrame:
        return rerank(ranker, cands, batch_size=args.batch)

    def naive() -> list[float]:
        return naive_rerank(ranker, pairs, args.batch)

    ranker.encoded = 0
    run = ours()
    encoded = ranker.encoded
    by_pair = {(q, d): s for q, d, s in run.select("query_id", "doc_id", "score").iter_rows()}
    reference = naive()
    keys = list(zip(qids, dids, strict=True))
    diff = max(abs(by_pair[k] - s) for k, s in zip(keys, reference, strict=True))
    log.info("max |ours - naive| score difference: %.2e", diff)
    naive_seqs = sequences_per_pair(ranker) * n
    log.info("encoder sequences: ours %d, naive %d", encoded, naive_seqs)
    ours_rate, naive_rate = [], []
    for _ in range(args.repeats):
        ours_rate.append(n / timed(ours)[0])
        naive_rate.append(n / timed(naive)[0])
    row = report(f"rerank ({args.arch})", "pairs/s", ours_rate, naive_rate, higher=True)
    row |= {
        "arch": args.arch,
        "ours_pairs_s": ours_rate,
        "naive_pairs_s": naive_rate,
        "pairs": n,
        "distinct_docs": len(set(dids)),
        "ours_sequences": encoded,
        "naive_sequences": naive_seqs,
        "batch": args.batch,
        "max_len": args.max_len,
        "layers": args.layers or 6,
        "device": args.device,
        "max_abs_score_diff": diff,
        "threads": torch.get_num_threads(),
    }
    write_row("rerank", row, args.out)


if __name__ == "__main__":
    main()
