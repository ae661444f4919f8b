"""Training loop of a ranker of any family on training groups with a registered loss (SPEC §5).

The groups are read in the order given (an upstream ordering stage shuffles or orders the
triples); each step scores the documents of ``batch_size`` groups in one forward pass (each
distinct text encoded once, dynamic padding), applies the method's loss (only the tensors
its record ``needs``) plus any trainable loss terms (``pipeline.train.losses._terms``: AdvBERT's
adversary), AdamW and a linear warm-up/decay schedule. Runs are deterministic on CPU for a
fixed seed. With ``checkpoint_dir`` a run saves checkpoints and resumes from them
(``pipeline.train.checkpoint``: a resumed CPU run ends with the same weights as an
uninterrupted one); with ``devices > 1`` it trains under DistributedDataParallel
(``pipeline.train.distributed``)."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import polars as pl
import torch
from torch import Tensor, nn
from torch.optim import Optimizer
from transformers import get_linear_schedule_with_warmup

from pipeline.errors import InputError
from pipeline.models.base import Ranker
from pipeline.models.encoders import resolve_device
from pipeline.progress import progress
from pipeline.train import distributed, live
from pipeline.train.checkpoint import (
    Checkpointer,
    TrainState,
    check_checkpoint_args,
    run_fingerprint,
)
from pipeline.train.config import TrainConfig
from pipeline.train.distributed import Rank
from pipeline.train.groups import Groups, base_names, doc_bias, pair_batch, prepare_groups
from pipeline.train.losses import Objective, add_term, get_record, score_value
from pipeline.train.losses._terms import LossTerm

logger = logging.getLogger(__name__)

__all__ = [
    "Groups",
    "LossTerm",
    "TrainConfig",
    "doc_bias",
    "objective_needs",
    "prepare_groups",
    "train_model",
]


def batch_plan(lengths: Sequence[int], cfg: TrainConfig) -> list[list[int]]:
    """Triple indices of each batch of one pass over the triples (in their given order).

    Plain: consecutive slices of ``batch_size``. With ``length_window`` = W (length-bucketed
    batches): each run of W × batch_size consecutive triples is sorted by ``lengths`` (the
    longer of a triple's two sequences; stable), cut into batches, and those W batches are
    visited in a seeded random order. A batch then pads to a length close to its members',
    while an ordering (the curriculum) moves by at most one window.
    """
    n, size = len(lengths), cfg.batch_size
    if not cfg.length_window:
        return [list(range(start, min(start + size, n))) for start in range(0, n, size)]
    span = cfg.length_window * size
    plan: list[list[int]] = []
    for w, start in enumerate(range(0, n, span)):
        idx = sorted(range(start, min(start + span, n)), key=lengths.__getitem__)
        chunks = [idx[i : i + size] for i in range(0, len(idx), size)]
        order = np.random.default_rng([cfg.seed, w]).permutation(len(chunks))
        plan.extend(chunks[int(i)] for i in order)
    return plan


def _batches(lengths: Sequence[int], cfg: TrainConfig) -> Iterator[list[int]]:
    """Triple indices per step: the batch plan, epoch after epoch, up to ``total_steps``."""
    plan = batch_plan(lengths, cfg)
    total = cfg.total_steps(len(lengths))
    return itertools.islice(itertools.chain.from_iterable(itertools.repeat(plan)), total)


def train_model(
    model: Ranker,
    groups: Groups,
    objective: Objective,
    cfg: TrainConfig,
    *,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int | None = None,
    terms: Sequence[LossTerm] | None = None,
    log: live.StepSink | None = None,
) -> pl.DataFrame:
    """Train ``model`` in place on ``groups`` (in their given order); returns the training curve.

    ``objective``: the method's loss terms ``(name, config)``, summed with their weights
    (``pipeline.train.losses``); trainable terms (AdvBERT's adversary) are built here with
    ``cfg.seed``, train with the model (optimiser, clipping, checkpoints) and stay outside it.
    ``model`` must be bound to the texts (:meth:`Ranker.bind`). Curve rows (``step``, ``loss``
    = mean loss since the previous row, ``lr`` of that step) are logged every
    ``cfg.log_every`` steps and at the last step; a non-finite loss raises an error.
    ``checkpoint_dir``: resume from the checkpoint there when it belongs to this run, and save
    one every ``checkpoint_every`` steps. ``cfg.devices > 1`` spawns that many DDP ranks
    (unless already under ``torchrun``); ``model`` then gets rank 0's trained weights. Each
    step builds only the per-document tensors that the terms ``need``. ``terms``: the
    trainable terms already built, one per trainable term of ``objective`` in its order
    (for callers that inspect them after training). ``log`` receives every curve row as
    ``(step, {"loss", "lr", …})``, with the means of the values recorded through
    :func:`pipeline.train.live.record` during its steps (a :class:`~pipeline.train.live.TrainLog`
    run writes them to DVCLive).
    """
    records = [(get_record(name), c) for name, c in objective]
    if not records:
        raise InputError("a method's loss needs at least one term")
    if len(groups) == 0:
        raise InputError("no training triples")
    check_checkpoint_args(checkpoint_dir, checkpoint_every)
    rank = distributed.init_from_env(cfg.device)
    trainable = [(r, c) for r, c in records if r.term is not None]
    if terms is None:
        terms = [r.term(model.repr_dim, c, cfg.seed) for r, c in trainable]  # type: ignore[misc]
    if len(terms) != len(trainable):
        raise InputError(f"{len(terms)} built terms for {len(trainable)} trainable loss terms")
    if terms and (cfg.devices > 1 or rank.world > 1):
        raise InputError("train.devices > 1 is not supported with a trainable loss term yet")
    if rank.world == 1 and cfg.devices > 1:
        args = (groups, objective, cfg)
        kwargs = {"checkpoint_dir": checkpoint_dir, "checkpoint_every": checkpoint_every}
        rows = distributed.launch(_rank_entry, model.cpu(), args, kwargs, cfg.device)
        model.to(resolve_device(cfg.device)).eval()
        for row in rows:  # the ranks' rows, logged once they are back
            if log:
                log(int(row["step"]), {k: v for k, v in row.items() if k != "step"})
        return _curve(rows)
    distributed.check_world(cfg.devices, cfg.batch_size, rank)
    device = distributed.rank_device(cfg.device, rank)
    needs = tuple(k for r, c in records if r.fn is not None for k in r.needs_of(c))
    run = _Run(model, groups, objective, device, rank, needs,
               _Trainable(model, terms), [r.scale(c) for r, c in trainable])  # fmt: skip
    label = "+".join(name for name, _ in objective)
    saver = _checkpointer(checkpoint_dir, checkpoint_every, run, cfg, objective)
    torch.manual_seed(cfg.seed + rank.rank)
    run.trainable.to(device).train()
    model.warm([q for q, ds in zip(groups.qids, groups.docs, strict=True) for _ in ds],
               [d for ds in groups.docs for d in ds])  # fmt: skip
    start = time.perf_counter()
    with live.collecting(log if rank.is_main else None) as sink:  # + values code records
        state = run.steps(cfg, f"train {label}", saver, sink)
    run.trainable.eval()
    seconds = max(time.perf_counter() - start, 1e-9)
    if rank.is_main:
        msg = "trained %s: %d steps, %d groups in %.1f s (%.1f groups/s) on %s x %d"
        rate = state.pairs / seconds
        logger.info(msg, label, state.step, state.pairs, seconds, rate, device, rank.world)
    return _curve(state.rows)


def objective_needs(objective: Objective) -> set[str]:
    """The per-document tensors (``psi``, ``zeta``) the terms of ``objective`` read: what
    the training groups must carry."""
    records = [(get_record(name), cfg) for name, cfg in objective]
    names = base_names([k for r, c in records if r.fn is not None for k in r.needs_of(c)])
    return names.union(*(r.needs for r, _ in records if r.term is not None))


def _pairs_frame(groups: Groups) -> pl.DataFrame:
    rows = [(q, ds[0], n) for q, ds in zip(groups.qids, groups.docs, strict=True) for n in ds[1:]]
    return pl.DataFrame(rows, schema=["query_id", "pos_doc_id", "neg_doc_id"], orient="row")


def _checkpointer(
    directory: str | Path | None,
    every: int | None,
    run: _Run,
    cfg: TrainConfig,
    objective: Objective,
) -> Checkpointer | None:
    """The run's checkpointing, keyed by everything that determines its result."""
    if directory is None:
        return None
    config = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in ("device", "devices")}
    terms = [(name, dataclasses.asdict(c)) for name, c in objective]
    settings: dict[str, object] = {"config": config, "loss": terms}
    settings |= {"world": run.rank.world, "model": dataclasses.asdict(run.model.cfg)}
    settings["terms"] = [repr(t) for t in run.trainable.terms]
    inputs = (_pairs_frame(run.groups), run.model.queries, run.model.docs)
    key = run_fingerprint(settings, inputs, run.groups.bias.values(), run.trainable)
    return Checkpointer(Path(directory), every, key, run.rank, run.device)


def _rank_entry(model: Ranker, *args: object, **kwargs: object) -> list[dict[str, float]]:
    """What each spawned rank runs: ``train_model`` inside the process group; curve rows."""
    curve: pl.DataFrame = train_model(model, *args, **kwargs)  # type: ignore[arg-type]
    return curve.to_dicts()


def _curve(rows: list[dict[str, float]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"step": pl.Int64, "loss": pl.Float64, "lr": pl.Float64})


class _Trainable(nn.Module):
    """The ranker and the loss terms that train with it: one parameter list for the
    optimiser and the clipping, one state for checkpoints."""

    ranker: Ranker
    terms: nn.ModuleList

    def __init__(self, ranker: Ranker, terms: Sequence[LossTerm]) -> None:
        super().__init__()
        self.ranker = ranker
        self.terms = nn.ModuleList(terms)


@dataclass
class _Run:
    model: Ranker
    groups: Groups
    objective: Objective
    device: torch.device
    rank: Rank
    needs: tuple[str, ...]
    trainable: _Trainable
    weights: list[float | None]  # of the trainable terms

    def steps(
        self, cfg: TrainConfig, desc: str, saver: Checkpointer | None, log: live.StepSink | None
    ) -> TrainState:
        """Run the optimiser steps not done yet; the final state (curve rows, pairs seen)."""
        total = cfg.total_steps(len(self.groups))
        optimizer, scheduler = _optimizer(self.trainable, cfg, self.device, total)
        state = saver.resume(self.trainable, optimizer, scheduler) if saver else TrainState()
        for row in state.rows if log else ():  # resumed: the log gets the rows before too
            log(int(row["step"]), {k: v for k, v in row.items() if k != "step"})  # type: ignore[misc]
        net = distributed.wrap(self.model, self.device, self.rank)
        bar = progress(total=total, initial=state.step, desc=desc, unit="step",
                       disable=not self.rank.is_main)  # fmt: skip
        lengths = [sum(len(self.model.doc_text(d)) for d in ds) for ds in self.groups.docs]
        todo = itertools.islice(_batches(lengths, cfg), state.step, None)
        for step, idx in enumerate(todo, start=state.step + 1):
            value, lr = self.step(net, optimizer, idx, step, cfg)
            scheduler.step()
            state.step, state.pairs = step, state.pairs + len(idx)
            state.window.append(value)
            bar.update()
            bar.set_postfix(loss=f"{value:.4f}", lr=f"{lr:.2e}", refresh=False)
            if step % cfg.log_every == 0 or step == total:
                mean = sum(state.window) / len(state.window)
                state.rows.append({"step": step, "loss": mean, "lr": lr})
                state.window = []
                if log:
                    log(step, {"loss": mean, "lr": lr})
            if saver:
                saver.step_done(state, self.trainable, optimizer, scheduler)
        bar.close()
        return state

    def step(
        self, net: nn.Module, optimizer: Optimizer, idx: list[int], step: int, cfg: TrainConfig
    ) -> tuple[float, float]:
        """One optimiser step on the global batch ``idx``; ``(global mean loss, lr)``."""
        mine, weight = distributed.shard(idx, cfg.batch_size, self.rank)
        loss = self.loss(net, mine)
        value = distributed.global_mean(float(loss.detach()), weight, self.device, self.rank)
        if not math.isfinite(value):
            raise FloatingPointError(
                f"non-finite loss {value} at step {step} (groups {idx[0]}..{idx[-1]}); lower "
                "train.lr or check the inputs' Ψ/ζ values"
            )
        lr = float(optimizer.param_groups[0]["lr"])
        _update(
            self.trainable,
            optimizer,
            loss if self.rank.world == 1 else loss * weight,
            cfg.grad_clip,
        )
        return value, lr

    def loss(self, net: nn.Module, idx: list[int]) -> Tensor:
        """Loss of the groups ``idx``: every text of the batch encoded once, in one pass."""
        g = self.groups
        qids = [g.qids[i] for i in idx for _ in g.docs[i]]
        dids = [d for i in idx for d in g.docs[i]]
        cuda = self.device.type == "cuda"
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=cuda):
            scores, reprs = net(qids, dids)
        mask = g.mask[idx].to(self.device)
        table = torch.zeros(mask.shape, device=self.device, dtype=torch.float32)
        table = table.masked_scatter(mask, scores.float())
        s_pos, s_neg, batch = pair_batch(g, idx, table, self.needs)
        loss = score_value(self.objective, s_pos, s_neg, batch)
        terms = cast("Sequence[LossTerm]", self.trainable.terms)
        for term, weight in zip(terms, self.weights, strict=True):
            docs = {k: g.bias[k][idx].to(self.device)[mask] for k in term.needs}
            loss = add_term(loss, term(reprs, docs), weight)
        assert loss is not None
        return loss


def _optimizer(
    model: nn.Module, cfg: TrainConfig, device: torch.device, total: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (no weight decay) with linear warm-up then linear decay to 0 at ``total``."""
    # fused AdamW: one kernel per step, several times faster than the per-tensor loop on CPU
    fused = True if device.type in ("cpu", "cuda") else None
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0, fused=fused)
    scheduler = get_linear_schedule_with_warmup(optimizer, cfg.warmup(total), total)
    return optimizer, scheduler


def _update(
    model: nn.Module, optimizer: torch.optim.Optimizer, loss: Tensor, clip: float | None
) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip is not None and clip > 0:
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], clip)
    optimizer.step()
