"""Reranking throughput (sequences/s): ``pipeline.rerank.rerank`` vs a naive loop.

Ours: every text tokenised once, sequences sorted by length so each batch pads to about its
members' length, inference mode, then the run is rebuilt in candidate order. Naive
(``benchmarks.naive_ranker.naive_rerank``): candidates in their order, tokenised per batch
and padded to max_len, under ``no_grad``. Same model (all-MiniLM-L6-v2, 6 layers unless
``--layers``), batch 64, max_len 256, MS MARCO-like passage lengths. Both sides' scores are
compared (max absolute difference reported) before timing.

    python -m benchmarks.bench_rerank [--queries 10] [--depth 100] [--repeats 3]
"""

from __future__ import annotations

import logging

import polars as pl
import torch

from benchmarks.common import parser, report, setup_logging, timed, write_row
from benchmarks.naive_ranker import naive_rerank
from benchmarks.synthetic import passages, queries, vocabulary
from pipeline.rerank import rerank
from pipeline.train.model import load_model

log = logging.getLogger("benchmarks.rerank")


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--queries", type=int, default=10)
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--max-len", type=int, default=256)
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    setup_logging()
    logging.getLogger("pipeline").setLevel(logging.WARNING)
    tokenizer, model = load_model("all-MiniLM-L6-v2", args.layers, seed=0)
    model.to(args.device).eval()
    vocab = vocabulary(tokenizer)
    n = args.queries * args.depth
    qmap = {f"q{i}": t for i, t in enumerate(queries(vocab, args.queries, seed=1))}
    dmap = {f"d{i}": t for i, t in enumerate(passages(vocab, n, seed=2))}
    qids = [f"q{i // args.depth}" for i in range(n)]
    cands = pl.DataFrame(
        {
            "query_id": qids,
            "doc_id": list(dmap),
            "rank": [i % args.depth + 1 for i in range(n)],
            "score": [0.0] * n,
        }
    )
    pairs = [(qmap[q], dmap[d]) for q, d in zip(qids, dmap, strict=True)]

    def ours() -> pl.DataFrame:
        return rerank(
            model, tokenizer, cands, qmap, dmap, batch_size=args.batch,
            max_len=args.max_len, q_len=32, device=args.device,
        )  # fmt: skip

    def naive() -> list[float]:
        return naive_rerank(model, tokenizer, pairs, args.batch, args.max_len)

    run = ours()
    by_doc = dict(zip(run["doc_id"], run["score"], strict=True))
    reference = naive()
    diff = max(abs(by_doc[d] - s) for d, s in zip(dmap, reference, strict=True))
    log.info("max |ours - naive| score difference: %.2e", diff)
    ours_rate, naive_rate = [], []
    for _ in range(args.repeats):
        ours_rate.append(n / timed(ours)[0])
        naive_rate.append(n / timed(naive)[0])
    row = report("rerank", "seq/s", ours_rate, naive_rate, higher=True)
    row |= {
        "ours_seq_s": ours_rate,
        "naive_seq_s": naive_rate,
        "sequences": n,
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
