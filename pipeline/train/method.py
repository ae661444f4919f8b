"""Train one method: every fold (SPEC §7) and seed, with its EqualizeIR / AdvBERT extras.

``train_method`` is what the ``train@<method>`` stage runs: for each seed and each fold it
builds the untrained ranker of ``model.arch``, binds the texts, trains it on the fold's
ordered triples with the method's loss, and saves it to ``<out>/<seed folder>/fold-<k>``.
The method's loss is its list of terms (``pipeline.train.losses``): a term with a
``prepare`` hook computes per-pair values first (EqualizeIR's ``poe`` trains the weak learner
f_B of the same family and scores the fold's training pairs with it); a trainable term
(AdvBERT's ``adversary``) trains beside the ranker and is not saved with it. The training
groups carry only the per-document tensors the terms need.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path

import polars as pl
from torch import Tensor

from pipeline import paths
from pipeline.models.base import Key
from pipeline.models.registry import build_ranker
from pipeline.params import Params
from pipeline.train import distributed
from pipeline.train.checkpoint import clear_checkpoint
from pipeline.train.groups import doc_bias, prepare_groups
from pipeline.train.live import TrainLog
from pipeline.train.loop import objective_needs, train_model
from pipeline.train.losses import Prepared, get_record
from pipeline.train.losses.common import PairScores

log = logging.getLogger(__name__)


def folds_of(ordered: pl.DataFrame) -> list[tuple[int, pl.DataFrame]]:
    """``(fold, its triples in training order)``; a table without ``fold`` is fold 0."""
    if "fold" not in ordered.columns:
        ordered = ordered.with_columns(pl.lit(0, dtype=pl.Int64).alias("fold"))
    parts = ordered.sort("fold", "position").partition_by("fold", maintain_order=True)
    return [(int(p["fold"][0]), p) for p in parts]


def train_method(
    params: Params,
    method: str,
    ordered: pl.DataFrame,
    texts: tuple[Mapping[str, str], Mapping[str, str]],
    doc_scores: pl.DataFrame,
    out: Path,
    features: Mapping[Key, Tensor] | None = None,
    train_log: TrainLog | None = None,
) -> pl.DataFrame:
    """Train ``method`` for every seed and fold into ``out``; the mean training curve.

    ``features``: precomputed frozen-bottom states of the texts (the ``features`` stage).
    ``train_log``: the method's DVCLive log; each model logs as ``[seed-<n>/]fold-<k>``."""
    features = features or {}
    m = params.methods[method]
    needs = objective_needs(m.terms)
    curves = []
    for seed, sub in params.train.seed_runs():
        for fold, triples in folds_of(ordered):
            log.info("train@%s: seed %d, fold %d, %d triples", method, seed, fold, triples.height)
            ctx = Prepared(params, m.psi, triples, texts, doc_scores, seed, features)
            pairs: PairScores = {}
            for name, cfg in m.terms:  # per-pair values (EqualizeIR's weak learner)
                prepare = get_record(name).prepare
                if prepare is not None:
                    pairs |= prepare(ctx, cfg)
            ranker = build_ranker(params.model, seed)
            ranker.bind(*texts)
            ranker.preload(features)
            bias = {k: v for k, v in doc_bias(doc_scores, m.psi).items() if k in needs}
            cfg = dataclasses.replace(params.train, seed=seed)
            groups = prepare_groups(triples, cfg.group_size, bias, pairs or None)
            every = params.train.checkpoint_every
            ckpt = paths.checkpoints(method, sub, fold)  # outside the outs: kept
            curve = train_model(
                ranker, groups, m.terms, cfg,
                checkpoint_dir=ckpt if every else None, checkpoint_every=every,
                log=train_log.run(f"{sub}/fold-{fold}".lstrip("/")) if train_log else None,
            )  # fmt: skip
            if distributed.is_main():  # under torchrun, rank 0 alone writes the model
                ranker.save(out / sub / f"fold-{fold}")
                clear_checkpoint(ckpt)
            curves.append(
                curve.with_columns(pl.lit(seed).alias("seed"), pl.lit(fold).alias("fold"))
            )
    return pl.concat(curves).group_by("step", maintain_order=True).agg(pl.col("loss", "lr").mean())
