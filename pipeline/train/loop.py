"""Training loop of the cross-encoder on ordered triples with a registered pairwise loss (SPEC §5).

The triples are read in the order given (an upstream ordering stage shuffles or orders them);
each step scores the positive and negative documents of ``batch_size`` triples in one
forward pass (dynamic padding), applies the loss, AdamW and a linear warm-up/decay schedule.
Runs are deterministic on CPU for a fixed seed.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import polars as pl
import torch
from torch import Tensor
from tqdm import tqdm
from transformers import PreTrainedTokenizerBase, get_linear_schedule_with_warmup

from pipeline.train.batching import Pair, PairEncoder, collate
from pipeline.train.losses import LossFn, get_loss
from pipeline.train.model import CrossEncoder, resolve_device

logger = logging.getLogger(__name__)

PSI_COLUMNS = {"bool_abs": "psi_bool", "tf_abs": "psi_tf", "tc_abs": "psi_tc"}
"""params ``psi`` value → signed ``doc_scores`` column whose absolute value is Ψ."""

TRIPLE_COLUMNS = ("query_id", "pos_doc_id", "neg_doc_id")


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters (params.yaml ``train`` section).

    ``warmup_steps`` wins over ``warmup_ratio`` (a share of the total steps) when given.
    ``max_steps`` caps the steps of ``epochs`` passes over the triples; each pass reads the
    triples in the same order. ``grad_clip`` ≤ 0 or ``None`` disables clipping.
    """

    batch_size: int = 16
    lr: float = 3e-5
    warmup_steps: int | None = None
    warmup_ratio: float = 0.1
    epochs: int = 1
    max_len: int = 128
    q_len: int = 32
    seed: int = 0
    max_steps: int | None = None
    log_every: int = 10
    grad_clip: float | None = 1.0
    device: str = "auto"

    def __post_init__(self) -> None:
        checks = {
            "batch_size >= 1": self.batch_size >= 1,
            "lr > 0": self.lr > 0,
            "epochs >= 1": self.epochs >= 1,
            "log_every >= 1": self.log_every >= 1,
            "0 <= warmup_ratio <= 1": 0 <= self.warmup_ratio <= 1,
            "warmup_steps >= 0": self.warmup_steps is None or self.warmup_steps >= 0,
            "max_steps >= 1": self.max_steps is None or self.max_steps >= 1,
        }
        failed = [rule for rule, ok in checks.items() if not ok]
        if failed:
            raise ValueError(f"invalid train config {self}: need {', '.join(failed)}")

    def total_steps(self, n_triples: int) -> int:
        """Optimiser steps for ``n_triples`` triples."""
        steps = self.epochs * math.ceil(n_triples / self.batch_size)
        return min(steps, self.max_steps) if self.max_steps is not None else steps

    def warmup(self, total: int) -> int:
        """Warm-up steps: ``warmup_steps`` if set, else ``round(warmup_ratio × total)``."""
        return (
            self.warmup_steps if self.warmup_steps is not None else round(self.warmup_ratio * total)
        )


@dataclass(frozen=True)
class TrainExamples:
    """Pair inputs of every triple's positive and negative, with their Ψ and ζ."""

    pos: list[Pair]
    neg: list[Pair]
    bias: dict[str, Tensor]  # psi_pos, psi_neg, zeta_pos, zeta_neg, each [n_triples] float32


def doc_bias(
    doc_scores: pl.DataFrame, psi_column: str
) -> tuple[dict[str, float], dict[str, float]]:
    """``(Ψ by doc_id, ζ by doc_id)`` with Ψ = ``|doc_scores[PSI_COLUMNS[psi_column]]|``."""
    if psi_column not in PSI_COLUMNS:
        raise ValueError(f"unknown psi {psi_column!r}; known: {sorted(PSI_COLUMNS)}")
    col = PSI_COLUMNS[psi_column]
    missing = {"doc_id", col, "neutrality"} - set(doc_scores.columns)
    if missing:
        raise ValueError(f"doc_scores lacks columns {sorted(missing)}; has {doc_scores.columns}")
    values = pl.col(col, "neutrality").cast(pl.Float64)
    bad = doc_scores.filter(pl.any_horizontal(values.is_null() | values.is_nan()))
    if bad.height:
        doc_id = bad["doc_id"][0]
        raise ValueError(f"doc_scores has a missing/NaN {col} or neutrality for doc_id {doc_id!r}")
    ids = doc_scores["doc_id"].cast(pl.String).to_list()
    psi = doc_scores[col].cast(pl.Float64).abs().to_list()
    zeta = doc_scores["neutrality"].cast(pl.Float64).to_list()
    return dict(zip(ids, psi, strict=True)), dict(zip(ids, zeta, strict=True))


def _lookup(table: Mapping[str, float], ids: list[str]) -> Tensor:
    for doc_id in ids:
        if doc_id not in table:
            raise ValueError(f"doc_id {doc_id!r} of the triples has no row in doc_scores")
    return torch.tensor([table[d] for d in ids], dtype=torch.float32)


def prepare_examples(
    encoder: PairEncoder,
    triples: pl.DataFrame,
    queries: Mapping[str, str],
    docs: Mapping[str, str],
    bias: tuple[dict[str, float], dict[str, float]],
) -> TrainExamples:
    """Tokenise the triples' texts once and attach Ψ/ζ of each positive and negative."""
    missing = set(TRIPLE_COLUMNS) - set(triples.columns)
    if missing:
        raise ValueError(f"triples lack columns {sorted(missing)}; has {triples.columns}")
    qids, pos, neg = (triples[c].cast(pl.String).to_list() for c in TRIPLE_COLUMNS)
    encoder.add(queries, docs, qids, pos + neg)
    psi, zeta = bias
    tensors = {
        "psi_pos": _lookup(psi, pos),
        "psi_neg": _lookup(psi, neg),
        "zeta_pos": _lookup(zeta, pos),
        "zeta_neg": _lookup(zeta, neg),
    }
    return TrainExamples(
        pos=[encoder.pair(q, d) for q, d in zip(qids, pos, strict=True)],
        neg=[encoder.pair(q, d) for q, d in zip(qids, neg, strict=True)],
        bias=tensors,
    )


def _batches(n: int, cfg: TrainConfig) -> Iterator[list[int]]:
    """Triple indices per step: consecutive slices, epoch after epoch, up to ``total_steps``."""
    step = 0
    total = cfg.total_steps(n)
    while True:
        for start in range(0, n, cfg.batch_size):
            if step == total:
                return
            step += 1
            yield list(range(start, min(start + cfg.batch_size, n)))


def train_model(
    model: CrossEncoder,
    tokenizer: PreTrainedTokenizerBase,
    triples: pl.DataFrame,
    queries: Mapping[str, str],
    docs: Mapping[str, str],
    doc_scores: pl.DataFrame,
    loss_name: str,
    loss_params: Mapping[str, float],
    psi_column: str,
    cfg: TrainConfig,
) -> pl.DataFrame:
    """Train ``model`` in place on ``triples`` (in their given order); returns the training curve.

    Curve rows (``step``, ``loss`` = mean loss since the previous row, ``lr`` of that step) are
    logged every ``cfg.log_every`` steps and at the last step. Unknown query/doc ids in the
    triples and a non-finite loss raise errors naming the culprit.
    """
    loss_fn = get_loss(loss_name)
    if triples.height == 0:
        raise ValueError("no training triples")
    encoder = PairEncoder(tokenizer, cfg.max_len, cfg.q_len)
    ex = prepare_examples(encoder, triples, queries, docs, doc_bias(doc_scores, psi_column))
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    model.to(device).train()
    start = time.perf_counter()
    run = _Run(model, ex, loss_fn, loss_params, device, encoder.pad_id)
    rows, pairs = run.steps(cfg, desc=f"train {loss_name}")
    model.eval()
    seconds = max(time.perf_counter() - start, 1e-9)
    msg = "trained %s: %d steps, %d pairs in %.1f s (%.1f pairs/s) on %s"
    steps = cfg.total_steps(triples.height)
    logger.info(msg, loss_name, steps, pairs, seconds, pairs / seconds, device)
    return pl.DataFrame(rows, schema={"step": pl.Int64, "loss": pl.Float64, "lr": pl.Float64})


@dataclass
class _Run:
    model: CrossEncoder
    ex: TrainExamples
    loss_fn: LossFn
    params: Mapping[str, float]
    device: torch.device
    pad_id: int

    def steps(self, cfg: TrainConfig, desc: str) -> tuple[list[dict[str, float]], int]:
        """Run all optimiser steps; ``(curve rows, pairs seen)``."""
        total = cfg.total_steps(len(self.ex.pos))
        optimizer, scheduler = _optimizer(self.model, cfg, self.device, total)
        rows: list[dict[str, float]] = []
        window: list[float] = []
        pairs = 0
        bar = tqdm(_batches(len(self.ex.pos), cfg), total=total, desc=desc, unit="step",
                   file=sys.stderr, dynamic_ncols=True)  # fmt: skip
        for step, idx in enumerate(bar, start=1):
            loss = self.loss(idx)
            value = float(loss.detach())
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"non-finite loss {value} at step {step} (triples {idx[0]}..{idx[-1]})"
                )
            lr = float(optimizer.param_groups[0]["lr"])
            _update(self.model, optimizer, loss, cfg.grad_clip)
            scheduler.step()
            window.append(value)
            pairs += len(idx)
            bar.set_postfix(loss=f"{value:.4f}", lr=f"{lr:.2e}", refresh=False)
            if step % cfg.log_every == 0 or step == total:
                rows.append({"step": step, "loss": sum(window) / len(window), "lr": lr})
                window.clear()
        bar.close()
        return rows, pairs

    def loss(self, idx: list[int]) -> Tensor:
        """Loss of the triples ``idx``: positives and negatives scored in one forward pass."""
        ex, device = self.ex, self.device
        inputs = collate([ex.pos[i] for i in idx] + [ex.neg[i] for i in idx], self.pad_id)
        pin = device.type == "cuda"
        on_dev = {
            k: (v.pin_memory() if pin else v).to(device, non_blocking=pin)
            for k, v in inputs.items()
        }
        index = torch.tensor(idx, dtype=torch.long)
        batch = {k: v[index].to(device) for k, v in ex.bias.items()}
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=pin):
            scores = self.model(**on_dev)
        s_pos, s_neg = scores.float().split(len(idx))
        return self.loss_fn(s_pos, s_neg, batch, self.params)


def _optimizer(
    model: CrossEncoder, cfg: TrainConfig, device: torch.device, total: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (no weight decay) with linear warm-up then linear decay to 0 at ``total``."""
    # fused AdamW: one kernel per step, several times faster than the per-tensor loop on CPU
    fused = True if device.type in ("cpu", "cuda") else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0, fused=fused)
    scheduler = get_linear_schedule_with_warmup(optimizer, cfg.warmup(total), total)
    return optimizer, scheduler


def _update(
    model: CrossEncoder, optimizer: torch.optim.Optimizer, loss: Tensor, clip: float | None
) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip is not None and clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
