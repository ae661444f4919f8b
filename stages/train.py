"""Stage `train@<method>`: cross-encoder trained on the method's ordered triples and loss.

With `train.seeds` the method is trained once per seed into `models/<method>/seed-<n>/`
(the seed sets the head's initialisation, the dropout and the EqualizeIR/AdvBERT extras; the
triple order is the order stage's). EqualizeIR methods (`loss: poe`) first train the weak
learner f_B by `weak_strategy` and score the triples with it; AdvBERT methods (`adv_weight`)
train an adversary head alongside.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl
from torch import Tensor

from pipeline import io, schemas
from pipeline.params import MethodParams, Params, get_method
from pipeline.train import distributed, weak
from pipeline.train.checkpoint import clear_checkpoint
from pipeline.train.loop import TrainConfig, attach_adversary, train_model
from pipeline.train.model import load_model, save_model
from stages.common import run_stage, setup, torch_threads

log = logging.getLogger("stages.train")


def train_config(params: Params, seed: int | None = None) -> TrainConfig:
    """The ``train`` section as a :class:`TrainConfig`; ``seed`` overrides ``train.seed``."""
    t = params.train
    return TrainConfig(
        batch_size=t.batch_size,
        lr=t.lr,
        warmup_ratio=t.warmup_ratio,
        warmup_steps=t.warmup_steps,
        epochs=t.epochs,
        max_len=params.model.max_len,
        q_len=params.model.q_len,
        seed=t.seed if seed is None else seed,
        max_steps=t.max_steps,
        log_every=t.log_every,
        grad_clip=t.grad_clip,
        device=t.device,
        devices=t.devices,
        length_window=t.length_window,
    )


def weak_scores(
    params: Params,
    m: MethodParams,
    triples: pl.DataFrame,
    texts: tuple[Mapping[str, str], Mapping[str, str]],
    doc_scores: pl.DataFrame,
    seed: int,
) -> dict[str, Tensor]:
    """EqualizeIR (SPEC §6.3): train f_B by the method's strategy, score the triples."""
    queries, docs = texts
    cfg = train_config(params, seed)
    assert m.weak_strategy is not None
    s = weak.weak_setup(m.weak_strategy, triples, queries, cfg.total_steps(triples.height), seed)
    layers = s.n_layers if s.n_layers is not None else params.model.n_layers
    tokenizer, f_b = load_model(params.model.name, layers, seed)
    weak_cfg = dataclasses.replace(cfg, max_steps=s.max_steps or cfg.max_steps)
    train_model(
        f_b, tokenizer, s.triples, s.queries, docs, doc_scores, "margin",
        {"margin": 1.0}, m.psi, weak_cfg,
    )  # fmt: skip
    scored = weak.score_triples(
        f_b, tokenizer, triples, queries, docs, cfg.max_len, cfg.q_len, device=cfg.device
    )
    return weak.weak_tensors(triples, scored)


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    params = ns.params
    m = get_method(params, ns.method)
    torch_threads(params)
    triples = io.read_table(f"data/order/{ns.method}.parquet", schemas.ORDERED_TRIPLES)
    triples = triples.sort("position")
    corpus = io.read_table("data/corpus.parquet", schemas.CORPUS)
    queries = io.read_table("data/queries.parquet", schemas.QUERIES)
    doc_scores = io.read_table("data/doc_scores.parquet", schemas.DOC_SCORES)
    texts = (
        dict(zip(queries["query_id"], queries["text"], strict=True)),
        dict(zip(corpus["doc_id"], corpus["text"], strict=True)),
    )
    curves = []
    for seed, sub in params.train.seed_runs():
        curve = train_one(params, ns.method, m, triples, texts, doc_scores, seed, sub)
        curves.append(curve.with_columns(pl.lit(seed).alias("seed")))
    if not distributed.is_main():  # under torchrun, rank 0 alone writes the outputs
        return
    # Several seeds: the plotted curve is the per-step mean over seeds.
    curve = pl.concat(curves).group_by("step", maintain_order=True).agg(pl.col("loss", "lr").mean())
    io.write_text(curve.write_csv(), f"plots/train/{ns.method}.csv")
    final = curve["loss"][-1]
    log.info("train@%s: %d logged steps, final loss %.4f", ns.method, curve.height, final)


def train_one(
    params: Params,
    method: str,
    m: MethodParams,
    triples: pl.DataFrame,
    texts: tuple[Mapping[str, str], Mapping[str, str]],
    doc_scores: pl.DataFrame,
    seed: int,
    sub: str,
) -> pl.DataFrame:
    """Train the method's model with ``seed``, save it to ``models/<method>/<sub>``; its curve."""
    if sub:
        log.info("train@%s: seed %d", method, seed)
    extra = weak_scores(params, m, triples, texts, doc_scores, seed) if m.loss == "poe" else None
    tokenizer, model = load_model(params.model.name, params.model.n_layers, seed)
    if m.adv_weight:
        attach_adversary(model, m.adv_weight, seed)
    every = params.train.checkpoint_every
    checkpoints = str(Path("checkpoints", method, sub))  # outside the stage's outs: DVC keeps it
    curve = train_model(
        model, tokenizer, triples, *texts, doc_scores, m.loss, m.loss_params(), m.psi,
        train_config(params, seed), extra_bias=extra,
        checkpoint_dir=checkpoints if every else None, checkpoint_every=every,
    )  # fmt: skip
    if distributed.is_main():  # under torchrun, rank 0 alone writes the model
        if m.adv_weight:
            del model.adversary  # the ranker alone is saved and used at test time
        save_model(model, tokenizer, str(Path("models", method, sub)))
        clear_checkpoint(checkpoints)
    return curve


if __name__ == "__main__":
    run_stage(main)
