"""Training throughput (triples/s): our trainer vs a naive loop, on MS MARCO-like lengths.

Ours (``pipeline.train.loop.train_model``): triples grouped by query (``--group-size``: one
positive and its negatives per group), every text of a step encoded once, each batch padded
to its own longest sequence, only the top ``--train-layers`` layers run with gradients while
the frozen bottom's states are computed once per text and cached, fused AdamW. Naive
(``benchmarks.naive_ranker.naive_train``): triple by triple, each pair's texts tokenised
inside the step, padded to ``max_len`` and run through the whole encoder every step (the
same layers frozen, but recomputed). Same model (all-MiniLM-L6-v2, family ``--arch``),
same triples (``--steps × --batch`` queries with ``--group-size − 1`` negatives each, drawn
from a pool of ``--docs`` documents), the margin loss. A triple is one (query, positive,
negative); triples/s counts the whole call from fresh weights (ours includes its
tokenisation and its cache filling).

    python -m benchmarks.bench_train [--arch bi_encoder] [--steps 12] [--repeats 3]
"""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import torch

from benchmarks.common import parser, report, setup_logging, timed, write_row
from benchmarks.naive_ranker import naive_train
from benchmarks.synthetic import passages, queries, vocabulary
from pipeline.models import family_names
from pipeline.models.base import Ranker
from pipeline.models.registry import build_ranker, model_params
from pipeline.train.groups import prepare_groups
from pipeline.train.loop import TrainConfig, train_model
from pipeline.train.losses.margin import MarginConfig

log = logging.getLogger("benchmarks.train")


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--arch", default="bi_encoder", choices=family_names())
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=4, help="groups (queries) per step")
    p.add_argument("--group-size", type=int, default=6)
    p.add_argument("--docs", type=int, default=300, help="distinct documents in the pool")
    p.add_argument("--max-len", type=int, default=256)
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--train-layers", type=int, default=1, help="0 trains every layer")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    setup_logging()
    logging.getLogger("pipeline").setLevel(logging.WARNING)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = model_params(args.arch, name="all-MiniLM-L6-v2", n_layers=args.layers,
        train_layers=args.train_layers or None, max_len=args.max_len, q_len=32,
    )  # fmt: skip
    vocab = vocabulary(build_ranker(cfg, seed=0).tokenizer)
    n_q, negs = args.steps * args.batch, args.group_size - 1
    qmap = {f"q{i}": t for i, t in enumerate(queries(vocab, n_q, seed=1))}
    dmap = {f"d{i}": t for i, t in enumerate(passages(vocab, args.docs, seed=2))}
    rng = np.random.default_rng(3)
    rows: list[tuple[str, str, str]] = []
    for q in qmap:
        pos, *neg = rng.choice(args.docs, size=1 + negs, replace=False)
        rows.extend((q, f"d{pos}", f"d{n}") for n in neg)
    triples = pl.DataFrame(rows, schema=["query_id", "pos_doc_id", "neg_doc_id"], orient="row")
    bias = {"psi": dict.fromkeys(dmap, 0.0), "zeta": dict.fromkeys(dmap, 1.0)}
    text_triples = [(qmap[q], dmap[p], dmap[n]) for q, p, n in rows]
    n = len(rows)

    def fresh() -> Ranker:
        ranker = build_ranker(cfg, seed=0).to(args.device)
        # own text tables: no cached bottom states carried over from an earlier repeat
        ranker.bind(dict(qmap), dict(dmap))
        return ranker

    def ours() -> float:
        ranker = fresh()
        train_cfg = TrainConfig(
            batch_size=args.batch, group_size=args.group_size, lr=3e-5, seed=0,
            log_every=args.steps, device=args.device,
        )  # fmt: skip
        seconds, _ = timed(
            lambda: train_model(
                ranker,
                prepare_groups(triples, args.group_size, bias),
                (("margin", MarginConfig()),),
                train_cfg,
            )
        )
        return n / seconds

    def naive() -> float:
        ranker = fresh()
        seconds, _ = timed(lambda: naive_train(ranker, text_triples, args.batch * negs, 3e-5))
        return n / seconds

    mine, base = [], []
    for _ in range(args.repeats):  # interleaved, so drifts of the machine hit both sides
        base.append(naive())
        mine.append(ours())
    row = report(f"train ({args.arch})", "triples/s", mine, base, higher=True)
    row |= {
        "arch": args.arch,
        "ours_triples_s": mine,
        "naive_triples_s": base,
        "steps": args.steps,
        "groups_per_step": args.batch,
        "group_size": args.group_size,
        "triples": n,
        "max_len": args.max_len,
        "layers": args.layers or 6,
        "train_layers": args.train_layers or "all",
        "device": args.device,
    }
    write_row("train", row, args.out)


if __name__ == "__main__":
    main()
