"""Training throughput (pairs/s): our trainer vs a naive loop, on MS MARCO-like lengths.

Ours (``pipeline.train.loop.train_model``): every text tokenised once up front, each batch
padded to its own longest sequence, fused AdamW; measured plain and with length-bucketed
batches (``train.length_window``). Naive (``benchmarks.naive_ranker.naive_train``): tokenise
inside the step and pad every batch to ``max_len``. Same model (all-MiniLM-L6-v2, all 6
layers unless ``--layers``), same triples, batch 16 triples (32 sequences), max_len 256 as in
the papers (SPEC §5). A pair is one training triple (a query with its positive and negative
passage: two sequences), as in the trainer's log. Each timed run starts from the same fresh
weights; pairs/s counts the whole call (ours includes its tokenisation).

    python -m benchmarks.bench_train [--steps 12] [--repeats 3] [--device cpu]
"""

from __future__ import annotations

import logging

import polars as pl
import torch

from benchmarks.common import parser, report, setup_logging, timed, write_row
from benchmarks.naive_ranker import naive_train
from benchmarks.synthetic import passages, queries, vocabulary
from pipeline.train.loop import TrainConfig, train_model
from pipeline.train.model import CrossEncoder, load_model

log = logging.getLogger("benchmarks.train")


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--max-len", type=int, default=256)
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--window", type=int, default=64, help="length_window of the bucketed run")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    setup_logging()
    logging.getLogger("pipeline").setLevel(logging.WARNING)
    if args.threads:
        torch.set_num_threads(args.threads)
    tokenizer, _ = load_model("all-MiniLM-L6-v2", args.layers, seed=0)
    vocab = vocabulary(tokenizer)
    n = args.steps * args.batch
    q_texts, docs = queries(vocab, n, seed=1), passages(vocab, 2 * n, seed=2)
    qmap = {f"q{i}": t for i, t in enumerate(q_texts)}
    dmap = {f"d{i}": t for i, t in enumerate(docs)}
    triples = pl.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(n)],
            "pos_doc_id": [f"d{i}" for i in range(n)],
            "neg_doc_id": [f"d{n + i}" for i in range(n)],
        }
    )
    scores = pl.DataFrame(
        {"doc_id": list(dmap), **{c: [0.0] * len(dmap) for c in ("psi_bool", "psi_tf", "psi_tc")},
         "neutrality": [1.0] * len(dmap)}
    )  # fmt: skip
    text_triples = [(q_texts[i], docs[i], docs[n + i]) for i in range(n)]

    def fresh() -> CrossEncoder:
        return load_model("all-MiniLM-L6-v2", args.layers, seed=0)[1]

    def ours(window: int | None) -> float:
        model = fresh()
        cfg = TrainConfig(
            batch_size=args.batch, lr=3e-5, max_len=args.max_len, q_len=32, seed=0,
            log_every=args.steps, device=args.device, length_window=window,
        )  # fmt: skip
        seconds, _ = timed(
            lambda: train_model(
                model, tokenizer, triples, qmap, dmap, scores, "margin", {}, "bool_abs", cfg
            )
        )
        return n / seconds

    def naive() -> float:
        model = fresh().to(args.device)
        seconds, _ = timed(
            lambda: naive_train(model, tokenizer, text_triples, args.batch, args.max_len, 3e-5)
        )
        return n / seconds

    plain, bucketed, base = [], [], []
    for _ in range(args.repeats):  # interleaved, so drifts of the machine hit every side
        base.append(naive())
        plain.append(ours(None))
        bucketed.append(ours(args.window))
    row = report("train (dynamic padding)", "pairs/s", plain, base, higher=True)
    row_b = report("train (+ length buckets)", "pairs/s", bucketed, base, higher=True)
    row |= {
        "bucketed_median": row_b["ours_median"],
        "bucketed_speedup": row_b["speedup"],
        "ours_pairs_s": plain,
        "bucketed_pairs_s": bucketed,
        "naive_pairs_s": base,
        "steps": args.steps,
        "batch_triples": args.batch,
        "max_len": args.max_len,
        "layers": args.layers or 6,
        "window": args.window,
        "device": args.device,
    }
    write_row("train", row, args.out)


if __name__ == "__main__":
    main()
