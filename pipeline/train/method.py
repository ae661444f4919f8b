"""Train one method: every fold (SPEC §7) and seed, with its EqualizeIR / AdvBERT extras.

``train_method`` is what the ``train@<method>`` stage runs: for each seed and each fold it
builds the untrained ranker of ``model.arch``, binds the texts, trains it on the fold's
ordered triples with the method's loss, and saves it to ``<out>/<seed folder>/fold-<k>``.
EqualizeIR methods (``loss: poe``) first train the weak learner f_B of the same family by
``weak_strategy`` and score the fold's training pairs with it; AdvBERT methods
(``adv_weight``) add an adversary loss term on the family's document representation
(:class:`~pipeline.train.adversary.AdversaryTerm`), which is not saved with the ranker. The
training groups carry only the per-document tensors the loss record and the terms need.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path

import polars as pl
from torch import Tensor

from pipeline.models.base import Key
from pipeline.models.encoders import resolve_device
from pipeline.models.registry import build_ranker
from pipeline.params import MethodParams, Params
from pipeline.rerank import rerank
from pipeline.train import distributed, weak
from pipeline.train.adversary import AdversaryTerm
from pipeline.train.checkpoint import CHECKPOINT_ROOT, clear_checkpoint, clear_method_checkpoints
from pipeline.train.groups import base_names, doc_bias, prepare_groups
from pipeline.train.jobs import Job, Result, run_jobs, weak_runs
from pipeline.train.live import StepSink, TrainLog
from pipeline.train.loop import TrainConfig, train_model
from pipeline.train.losses import get_record
from pipeline.train.terms import LossTerm

log = logging.getLogger(__name__)


def train_config(params: Params, seed: int) -> TrainConfig:
    """The ``train`` section as a :class:`TrainConfig` with ``seed``."""
    t = params.train
    keep = {f.name for f in dataclasses.fields(TrainConfig)} - {"seed"}
    return TrainConfig(seed=seed, **{k: getattr(t, k) for k in keep if hasattr(t, k)})


def folds_of(ordered: pl.DataFrame, seed: int | None = None) -> list[tuple[int, pl.DataFrame]]:
    """``(fold, its triples in training order)``; a table without ``fold`` is fold 0. With a
    ``seed`` column (``train.seeds``: one draw and order per seed), ``seed``'s rows only."""
    if "seed" in ordered.columns:
        if seed is None or seed not in set(ordered["seed"].unique().to_list()):
            raise ValueError(
                f"the ordered triples hold seeds {sorted(ordered['seed'].unique().to_list())}, "
                f"not {seed}; rerun the order stage (`dvc repro`) after changing train.seeds"
            )
        ordered = ordered.filter(pl.col("seed") == seed).drop("seed")
    if "fold" not in ordered.columns:
        ordered = ordered.with_columns(pl.lit(0, dtype=pl.Int64).alias("fold"))
    parts = ordered.sort("fold", "position").partition_by("fold", maintain_order=True)
    return [(int(p["fold"][0]), p) for p in parts]


def _weak_scores(
    params: Params, m: MethodParams, triples: pl.DataFrame, texts: tuple[Mapping[str, str], ...],
    doc_scores: pl.DataFrame, seed: int, features: Mapping[Key, Tensor],
    test: pl.DataFrame | None = None,
) -> tuple[dict[str, dict[tuple[str, str], float]], pl.DataFrame | None]:  # fmt: skip
    """EqualizeIR (SPEC §6.3): train f_B by the method's strategy, score the fold's pairs;
    with ``test`` (the fold's test candidates) also f_B's own run of them, so its
    effectiveness is measured (issue 21: a weak learner must be weaker, not useless)."""
    queries, docs = texts
    cfg = train_config(params, seed)
    assert m.weak_strategy is not None
    bias = doc_bias(doc_scores, m.psi)
    total = cfg.total_steps(len(prepare_groups(triples, cfg.group_size, bias)))
    s = weak.weak_setup(m.weak_strategy, triples, queries, total, seed, m.weak_layers)
    model_cfg = params.model
    if s.n_layers is not None:
        model_cfg = dataclasses.replace(model_cfg, n_layers=s.n_layers)
    f_b = build_ranker(model_cfg, seed)
    f_b.bind(s.queries, docs)
    if model_cfg == params.model and s.queries is queries:  # same bottom, same texts
        f_b.preload(features)
    groups = prepare_groups(s.triples, cfg.group_size, bias)
    weak_cfg = dataclasses.replace(cfg, max_steps=s.max_steps or cfg.max_steps)
    train_model(f_b, groups, "margin", {"margin": 1.0}, weak_cfg)
    f_b.bind(queries, docs)
    run = None if test is None or test.height == 0 else rerank(f_b, test, params.rerank.batch_size)
    return {"weak": weak.weak_pair_scores(f_b, triples)}, run


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
    for EqualizeIR methods given the test ``candidates``, each seed folder's run of the weak
    learners (fold k's f_B reranks fold k's test candidates). The (seed, fold) models train
    in ``train.workers`` processes (``pipeline.train.jobs``; one on a GPU or under torchrun).

    ``features``: precomputed frozen-bottom states of the texts (the ``features`` stage).
    ``train_log``: the method's DVCLive log; each model logs as ``[seed-<n>/]fold-<k>``."""
    m = params.methods[method]
    jobs = [
        Job(seed, sub, fold, triples,
            None if candidates is None or m.loss != "poe" else _fold_rows(candidates, fold))
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
    pairs, run = None, None
    if m.loss == "poe":
        pairs, run = _weak_scores(params, m, job.triples, ctx.texts, ctx.doc_scores, job.seed,
                                  ctx.features, job.test)  # fmt: skip
    ranker = build_ranker(params.model, job.seed)
    ranker.bind(*ctx.texts)
    ranker.preload(ctx.features)
    terms: list[LossTerm] = []
    if m.adv_weight:
        terms.append(AdversaryTerm(ranker.repr_dim, m.adv_weight, job.seed))
    needs = base_names(get_record(m.loss).needs).union(*(t.needs for t in terms))
    bias = {k: v for k, v in doc_bias(ctx.doc_scores, m.psi).items() if k in needs}
    cfg = train_config(params, job.seed)
    groups = prepare_groups(job.triples, cfg.group_size, bias, pairs)
    every = params.train.checkpoint_every
    ckpt = Path(CHECKPOINT_ROOT, method, job.sub, f"fold-{job.fold}")  # outside the outs
    curve = train_model(
        ranker, groups, m.loss, m.loss_params(), cfg, terms=terms,
        checkpoint_dir=ckpt if every else None, checkpoint_every=every, log=sink,
    )  # fmt: skip
    if distributed.is_main():  # under torchrun, rank 0 alone writes the model
        ranker.save(ctx.out / job.name)
        clear_checkpoint(ckpt)
    return Result(curve, run)


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
    return candidates.filter(pl.col("fold") == fold).drop("fold")
