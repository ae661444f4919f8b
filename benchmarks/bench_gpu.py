"""The paper profile's trainer and reranker on one NVIDIA GPU, beside a lean Hugging Face
loop on the same GPU in the same run (issue 30): pairs/s and achieved TFLOP/s against the
GPU's bf16 peak, for the BERT-mini shape (4 layers × 256) and the default's MiniLM shape
(6 × 384), at batch 16 (the papers') and 128.

Models are random weights of those shapes (BertConfig, the shipped MiniLM tokenizer, saved
to a temporary folder and loaded as `model.name`, so no download): throughput does not
depend on the weights. Ours: `pipeline.train.loop.train_model` (cross-encoder, full
fine-tuning, margin loss, groups of 2 = one triple, bf16 autocast on CUDA, `length_window`
64 as in the paper profile) and `pipeline.rerank.rerank`. Lean: `AutoModelForSequence-
Classification`, each batch tokenised at once with dynamic padding (to its longest pair),
bf16 autocast, fused AdamW, the same margin loss; reranking under `inference_mode`. Both
see the same MS MARCO-like synthetic triples (`benchmarks.synthetic`); a triple is two
query-passage pairs. FLOPs count the work on each pair's real tokens (no padding): forward
2·(weights per layer)·tokens + 4·tokens²·hidden per layer, training 3× forward; the peak is
NVIDIA's dense bf16 tensor figure for the GPU's name (`--peak-tflops` for another GPU).

    python -m benchmarks.bench_gpu [--triples 8192] [--repeats 2]

Without a CUDA GPU it stops at once, measuring and writing nothing (exit 2). About 5 min
on an H100; rows go to benchmarks/results/gpu.jsonl, and a Markdown table is printed for
docs/paper-scale.md ("Expected times").
"""

from __future__ import annotations

import logging
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch

from benchmarks.common import parser, setup_logging, timed, write_row

log = logging.getLogger("benchmarks.gpu")

SHAPES = {"bert-mini": (4, 256, 4, 1024), "minilm": (6, 384, 12, 1536)}
"""name → (layers, hidden, attention heads, intermediate size)."""
BF16_PEAK = (
    ("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.0), ("H200", 989.0),
    ("GH200", 989.0), ("A100", 312.0), ("L40S", 362.0), ("L4", 121.0), ("A10", 125.0),
)  # fmt: skip
"""Dense bf16 tensor TFLOP/s by GPU name (NVIDIA data sheets), first match wins."""
MAX_LEN, Q_LEN, LR = 256, 32, 3e-6


def no_gpu_message() -> str:
    build = torch.version.cuda or "none (a CPU build)"
    return (
        "benchmarks/bench_gpu.py measures on an NVIDIA GPU, and none is visible here "
        f"(torch {torch.__version__}, CUDA build {build}, torch.cuda.is_available() is "
        "False). Nothing was measured or written. Run it on a machine with a GPU and a "
        "CUDA build of torch (docs/paper-scale.md, step 2): python -m benchmarks.bench_gpu"
    )


def peak_tflops(name: str) -> float | None:
    return next((p for key, p in BF16_PEAK if key in name), None)


def random_model(shape: str, folder: Path) -> Path:
    """A random-weight BERT of `shape` with the shipped MiniLM tokenizer, saved to `folder`."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from pipeline.models.encoders import minilm_dir

    layers, hidden, heads, inter = SHAPES[shape]
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=inter,
                        max_position_embeddings=512)  # fmt: skip
    torch.manual_seed(0)
    path = folder / shape
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def pair_flops(lengths: np.ndarray, shape: str) -> float:
    """Forward FLOPs of pairs of `lengths` real tokens through the encoder of `shape`."""
    layers, hidden, _, inter = SHAPES[shape]
    weights = 4 * hidden * hidden + 2 * hidden * inter
    n = lengths.astype(np.float64)
    return float(layers * (2 * weights * n.sum() + 4 * hidden * (n * n).sum()))


def data(tokenizer: Any, n: int) -> tuple[dict[str, str], dict[str, str], pl.DataFrame]:
    from benchmarks.synthetic import passages, queries, vocabulary

    vocab = vocabulary(tokenizer)
    qmap = {f"q{i}": t for i, t in enumerate(queries(vocab, n, seed=1))}
    dmap = {f"d{i}": t for i, t in enumerate(passages(vocab, 2 * n, seed=2))}
    triples = pl.DataFrame({"query_id": list(qmap), "pos_doc_id": [f"d{2 * i}" for i in range(n)],
                            "neg_doc_id": [f"d{2 * i + 1}" for i in range(n)]})  # fmt: skip
    return qmap, dmap, triples


def lengths(tokenizer: Any, qmap: dict[str, str], dmap: dict[str, str], t: pl.DataFrame
            ) -> np.ndarray:  # fmt: skip
    qs = [qmap[q] for q in t["query_id"]] * 2
    ds = [dmap[d] for d in [*t["pos_doc_id"], *t["neg_doc_id"]]]
    enc = tokenizer(qs, ds, truncation="only_second", max_length=MAX_LEN)
    return np.array([len(ids) for ids in enc["input_ids"]])


def ours_train(path: Path, qmap: dict[str, str], dmap: dict[str, str], t: pl.DataFrame, *,
               batch: int, device: str) -> Callable[[], None]:  # fmt: skip
    from pipeline.models.registry import build_ranker
    from pipeline.sections import ModelParams
    from pipeline.train.groups import prepare_groups
    from pipeline.train.loop import TrainConfig, train_model
    from pipeline.train.losses.margin import MarginConfig

    cfg = ModelParams(arch="cross_encoder", name=str(path), train_layers=None,
                      max_len=MAX_LEN, q_len=Q_LEN)  # fmt: skip
    bias = {"psi": dict.fromkeys(dmap, 0.0), "zeta": dict.fromkeys(dmap, 1.0)}
    groups = prepare_groups(t, 2, bias)
    train = TrainConfig(batch_size=batch, group_size=2, lr=LR, seed=0, log_every=10**6,
                        device=device, length_window=64, warmup_steps=0)  # fmt: skip

    def go() -> None:
        ranker = build_ranker(cfg, seed=0).to(device)
        ranker.bind(dict(qmap), dict(dmap))
        train_model(ranker, groups, (("margin", MarginConfig()),), train)
        _sync(device)

    return go


def lean_train(path: Path, qmap: dict[str, str], dmap: dict[str, str], t: pl.DataFrame, *,
               batch: int, device: str) -> Callable[[], None]:  # fmt: skip
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    rows = list(t.iter_rows())

    def go() -> None:
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
        model = model.to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=LR, fused=True)
        model.train()
        for i in range(0, len(rows), batch):
            part = rows[i : i + batch]
            qs = [qmap[q] for q, _, _ in part] * 2
            ds = [dmap[p] for _, p, _ in part] + [dmap[n] for _, _, n in part]
            enc = tokenizer(qs, ds, padding="longest", truncation="only_second",
                            max_length=MAX_LEN, return_tensors="pt").to(device)  # fmt: skip
            with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
                scores = model(**enc).logits.float().view(2, -1)
            loss = torch.relu(1 - scores[0] + scores[1]).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        _sync(device)

    return go


def ours_rerank(path: Path, qmap: dict[str, str], dmap: dict[str, str], t: pl.DataFrame, *,
                batch: int, device: str) -> Callable[[], None]:  # fmt: skip
    from pipeline.models.registry import build_ranker
    from pipeline.rerank import rerank
    from pipeline.sections import ModelParams

    cfg = ModelParams(arch="cross_encoder", name=str(path), train_layers=None,
                      max_len=MAX_LEN, q_len=Q_LEN)  # fmt: skip
    ranker = build_ranker(cfg, seed=0).to(device).eval()
    ranker.bind(dict(qmap), dict(dmap))
    qids, n = [*t["query_id"], *t["query_id"]], len(t)
    cands = pl.DataFrame({"query_id": qids, "doc_id": [*t["pos_doc_id"], *t["neg_doc_id"]],
                          "rank": [1] * n + [2] * n, "score": [0.0] * 2 * n})  # fmt: skip

    def go() -> None:
        rerank(ranker, cands, batch_size=batch)
        _sync(device)

    return go


def lean_rerank(path: Path, qmap: dict[str, str], dmap: dict[str, str], t: pl.DataFrame, *,
                batch: int, device: str) -> Callable[[], None]:  # fmt: skip
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    model = model.to(device).eval()
    pairs = [(qmap[q], dmap[d]) for q, p, n in t.iter_rows() for d in (p, n)]

    def go() -> None:
        autocast = torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
        with torch.inference_mode(), autocast:
            for i in range(0, len(pairs), batch):
                qs, ds = zip(*pairs[i : i + batch], strict=True)
                enc = tokenizer(list(qs), list(ds), padding="longest", truncation="only_second",
                                max_length=MAX_LEN, return_tensors="pt").to(device)  # fmt: skip
                model(**enc).logits.float().cpu()
        _sync(device)

    return go


SIDES = {"train": (ours_train, lean_train, 3.0), "rerank": (ours_rerank, lean_rerank, 1.0)}
"""part → (ours, lean, FLOPs per pair as a multiple of the forward pass)."""


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def measure(path: Path, shape: str, batch: int, part: str, n: int, repeats: int,
            peak: float | None, device: str = "cuda") -> dict[str, Any]:  # fmt: skip
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    qmap, dmap, triples = data(tokenizer, n)
    flops = SIDES[part][2] * pair_flops(lengths(tokenizer, qmap, dmap, triples), shape)
    warm = triples.head(min(n, 8 * batch))
    rates: dict[str, list[float]] = {}
    for side, build in zip(("ours", "lean"), SIDES[part][:2], strict=True):
        build(path, qmap, dmap, warm, batch=batch, device=device)()  # context, kernels
        go = build(path, qmap, dmap, triples, batch=batch, device=device)
        rates[side] = [2 * n / timed(go)[0] for _ in range(repeats)]
    row: dict[str, Any] = {"shape": shape, "layers": SHAPES[shape][0],
                           "hidden": SHAPES[shape][1], "part": part, "batch": batch,
                           "pairs": 2 * n, "unit": "pairs/s", "peak_bf16_tflops": peak}  # fmt: skip
    for side, values in rates.items():
        best = max(values)
        tflops = flops / (2 * n / best) / 1e12
        row |= {f"{side}_pairs_s": values, f"{side}_tflops": tflops,
                f"{side}_share_of_peak": tflops / peak if peak else None}  # fmt: skip
    log.info("%s %s batch %d: ours %.0f pairs/s (%.1f TFLOP/s), lean %.0f pairs/s (%.1f)",
             shape, part, batch, max(rates["ours"]), row["ours_tflops"], max(rates["lean"]),
             row["lean_tflops"])  # fmt: skip
    return row


def table(rows: Sequence[dict[str, Any]], gpu: str) -> str:
    out = [f"| {gpu} | batch | ours pairs/s | TFLOP/s (% bf16 peak) | lean HF pairs/s | "
           "TFLOP/s (% peak) |", "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in rows:
        ours, lean = _cell(r, "ours"), _cell(r, "lean")
        out.append(f"| {r['shape']} {r['part']} | {r['batch']} | {max(r['ours_pairs_s']):,.0f} "
                   f"| {ours} | {max(r['lean_pairs_s']):,.0f} | {lean} |")  # fmt: skip
    return "\n".join(out) + "\n"


def _cell(row: dict[str, Any], side: str) -> str:
    share = row[f"{side}_share_of_peak"]
    return f"{row[f'{side}_tflops']:.1f}" + (f" ({100 * share:.1f}%)" if share else "")


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--triples", type=int, default=8192, help="triples per measurement")
    p.add_argument("--shapes", default="bert-mini,minilm", help=f"of {sorted(SHAPES)}")
    p.add_argument("--batches", default="16,128")
    p.add_argument("--peak-tflops", type=float, default=None, help="the GPU's dense bf16 peak")
    args = p.parse_args(argv)
    setup_logging()
    if not torch.cuda.is_available():
        log.error("%s", no_gpu_message())
        return 2
    logging.getLogger("pipeline").setLevel(logging.WARNING)
    gpu = torch.cuda.get_device_name(0)
    peak = args.peak_tflops or peak_tflops(gpu)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            path = random_model(shape, Path(tmp))
            for batch in (int(b) for b in args.batches.split(",")):
                for part in SIDES:
                    row = measure(path, shape, batch, part, args.triples, args.repeats, peak)
                    rows.append(row)
                    write_row("gpu", {"measured": True, "gpu": gpu, **row}, args.out)
    sys.stdout.write(table(rows, gpu))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
