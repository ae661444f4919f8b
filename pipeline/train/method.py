"""Train one method: every fold (SPEC §7) and seed, with its EqualizeIR / AdvBERT extras.

``train_method`` is what the ``train@<method>`` stage runs: for each seed and each fold it
builds the untrained ranker of ``model.arch``, binds the texts, trains it on the fold's
ordered triples with the method's loss, and saves it to ``<out>/<seed folder>/fold-<k>``.
The (seed, fold) models train in ``train.workers`` processes (``pipeline.train.jobs``).
The method's loss is its list of terms (``pipeline.train.losses``): a term with a
``prepare`` hook computes per-pair values first (EqualizeIR's ``poe`` trains the weak learner
f_B of the same family and scores the fold's training pairs with it, and reranks the fold's
test candidates with it so its own effectiveness is measured); a trainable term (AdvBERT's
``adversary``) trains beside the ranker and is not saved with it. The training groups carry
only the per-document tensors the terms need.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path

import polars as pl
from torch import Tensor

from pipeline import paths
from pipeline.errors import InputError
from pipeline.models.base import Key
from pipeline.models.encoders import resolve_device
from pipeline.models.registry import build_ranker
from pipeline.params import Params
from pipeline.train import distributed
from pipeline.train.checkpoint import clear_checkpoint, clear_method_checkpoints
from pipeline.train.groups import doc_bias, prepare_groups
from pipeline.train.jobs import Job, Result, run_jobs, weak_runs
from pipeline.train.live import StepSink, TrainLog
from pipeline.train.loop import objective_needs, train_model
from pipeline.train.losses import Prepared, get_record
from pipeline.train.losses.common import PairScores

log = logging.getLogger(__name__)


def folds_of(ordered: pl.DataFrame, seed: int | None = None) -> list[tuple[int, pl.DataFrame]]:
    """``(fold, its triples in training order)``; a table without ``fold`` is fold 0. With a
    ``seed`` column (``train.seeds``: one draw and order per seed), ``seed``'s rows only."""
    if "seed" in ordered.columns:
        if seed is None or seed not in set(ordered["seed"].unique().to_list()):
            raise InputError(
                f"the ordered triples hold seeds {sorted(ordered['seed'].unique().to_list())}, "
                f"not {seed}; rerun the order stage (`dvc repro`) after changing train.seeds"
            )
        ordered = ordered.filter(pl.col("seed") == seed).drop("seed")
    if "fold" not in ordered.columns:
        ordered = ordered.with_columns(pl.lit(0, dtype=pl.Int64).alias("fold"))
    parts = ordered.sort("fold", "position").partition_by("fold", maintain_order=True)
    return [(int(p["fold"][0]), p) for p in parts]


@dataclasses.dataclass(frozen=True)
class MethodContext:
    """What every fold model of a method is trained from (sent once to each worker)."""

    params: Params
    method: str
    texts: tuple[Mapping[str, str], Mapping[str, str]]
    doc_scores: pl.DataFrame
    out: Path
    features: Mapping[Key, Tensor]


def train_method(
    params: Params,
    method: str,
    ordered: pl.DataFrame,
    texts: tuple[Mapping[str, str], Mapping[str, str]],
    doc_scores: pl.DataFrame,
    out: Path,
    features: Mapping[Key, Tensor] | None = None,
    train_log: TrainLog | None = None,
    candidates: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    """Train ``method`` for every seed and fold into ``out``; the mean training curve and,
    for methods with a ``prepare`` term (EqualizeIR) given the test ``candidates``, each seed
    folder's run of the weak learners (fold k's f_B reranks fold k's test candidates).

    ``features``: precomputed frozen-bottom states of the texts (the ``features`` stage).
    ``train_log``: the method's DVCLive log; each model logs as ``[seed-<n>/]fold-<k>``."""
    m = params.methods[method]
    prepares = any(get_record(name).prepare is not None for name in m.loss)
    jobs = [
        Job(seed, sub, fold, triples,
            _fold_rows(candidates, fold) if prepares and candidates is not None else None)
        for seed, sub in params.train.seed_runs()
        for fold, triples in folds_of(ordered, seed if sub else None)
    ]  # fmt: skip
    context = MethodContext(params, method, texts, doc_scores, out, features or {})
    results = run_jobs(train_job, context, jobs, workers_for(params), params.train.threads,
                       train_log.run if train_log else None)  # fmt: skip
    curves = [r.curve.with_columns(pl.lit(j.seed).alias("seed"), pl.lit(j.fold).alias("fold"))
              for j, r in zip(jobs, results, strict=True)]  # fmt: skip
    values = [c for c in curves[0].columns if c not in ("step", "seed", "fold")]
    curve = pl.concat(curves).group_by("step", maintain_order=True).agg(pl.col(values).mean())
    return curve, weak_runs(jobs, results)


def workers_for(params: Params) -> int:
    """``train.workers``, except 1 where processes would share one device: a GPU, or
    ``torchrun`` (``train.devices`` > 1)."""
    t = params.train
    if t.devices > 1 or resolve_device(t.device).type != "cpu":
        return 1
    return t.workers


def train_job(ctx: MethodContext, job: Job, sink: StepSink | None) -> Result:
    """Train one (seed, fold) model and save it to ``<out>/<seed folder>/fold-<k>``."""
    params, method, m = ctx.params, ctx.method, ctx.params.methods[ctx.method]
    log.info("train@%s: seed %d, fold %d, %d triples", method, job.seed, job.fold,
             job.triples.height)  # fmt: skip
    prep = Prepared(params, m.psi, job.triples, ctx.texts, ctx.doc_scores, job.seed,
                    ctx.features, job.test)  # fmt: skip
    pairs: PairScores = {}
    for name, cfg in m.terms:  # per-pair values (EqualizeIR's weak learner)
        prepare = get_record(name).prepare
        if prepare is not None:
            pairs |= prepare(prep, cfg)
    ranker = build_ranker(params.model, job.seed)
    ranker.bind(*ctx.texts)
    ranker.preload(ctx.features)
    needs = objective_needs(m.terms)
    bias = {k: v for k, v in doc_bias(ctx.doc_scores, m.psi).items() if k in needs}
    cfg = dataclasses.replace(params.train, seed=job.seed)
    groups = prepare_groups(job.triples, cfg.group_size, bias, pairs or None)
    every = params.train.checkpoint_every
    ckpt = paths.checkpoints(method, job.sub, job.fold)  # outside the outs: kept
    curve = train_model(
        ranker, groups, m.terms, cfg,
        checkpoint_dir=ckpt if every else None, checkpoint_every=every, log=sink,
    )  # fmt: skip
    if distributed.is_main():  # under torchrun, rank 0 alone writes the model
        ranker.save(ctx.out / job.name)
        clear_checkpoint(ckpt)
    return Result(curve, prep.runs.get("weak"))


def finish_method(params: Params, method: str, models: Path) -> list[Path]:
    """Once every output of ``train@<method>`` is written: delete the seed folders of
    ``models`` that ``train.keep_models`` does not keep (their runs were made with them)
    and the method's checkpoints (nothing is left to resume); the folders deleted."""
    kept = {sub for _, sub in params.train.kept_runs()}
    gone = [models / sub for _, sub in params.train.seed_runs() if sub not in kept]
    for folder in gone:
        shutil.rmtree(folder, ignore_errors=True)
    clear_method_checkpoints(method)
    return gone


def _fold_rows(candidates: pl.DataFrame, fold: int) -> pl.DataFrame:
    """Fold ``fold``'s test candidates (all of them without a ``fold`` column)."""
    if "fold" not in candidates.columns:
        return candidates
    return candidates.filter(pl.col("fold") == fold).drop("fold", "assignment", strict=False)
