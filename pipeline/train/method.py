"""Train one method: every fold (SPEC §7) and seed, with its EqualizeIR / AdvBERT extras.

``train_method`` is what the ``train@<method>`` stage runs: for each seed and each fold it
builds the untrained ranker of ``model.arch``, binds the texts, trains it on the fold's
ordered triples with the method's loss, and saves it to ``<out>/<seed folder>/fold-<k>``.
The (seed, fold) models train in ``train.workers`` processes (``pipeline.train.jobs``).
The method's loss is its terms (``pipeline.train.losses``, in params order): a term with a
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
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl
from torch import Tensor

from pipeline import paths
from pipeline.errors import InputError
from pipeline.models.base import Key
from pipeline.models.card import write_training_card
from pipeline.models.encoders import resolve_device
from pipeline.models.registry import build_ranker, load_ranker
from pipeline.params import Params
from pipeline.rerank import rerank
from pipeline.retrieval.folds import for_seed
from pipeline.timing import Phases
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
    """What every fold model of a method is trained from (sent once to each worker);
    ``transfer``: the held-out collection's candidates (``None``: not reranked)."""

    params: Params
    method: str
    texts: tuple[Mapping[str, str], Mapping[str, str]]
    doc_scores: pl.DataFrame
    out: Path
    features: Mapping[Key, Tensor]
    transfer: pl.DataFrame | None = None
    groups: pl.DataFrame | None = None


@dataclasses.dataclass(frozen=True)
class SeedRuns:
    """One seed's runs by its saved fold models: the test candidates of every fold (fold
    order) and the held-out collection's (column ``fold``: the model; ``None`` when not
    reranked)."""

    seed: int
    sub: str
    run: pl.DataFrame
    transfer: pl.DataFrame | None


@dataclasses.dataclass(frozen=True)
class Trained:
    """What ``train_method`` gives back: the mean training curve, each seed folder's
    EqualizeIR weak run, each seed's runs (when candidates were given) and the seconds of
    the jobs' phases, summed over the models."""

    curve: pl.DataFrame
    weak_runs: dict[str, pl.DataFrame]
    runs: list[SeedRuns]
    seconds: dict[str, float]


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
    transfer: pl.DataFrame | None = None,
    groups: pl.DataFrame | None = None,
) -> Trained:
    """Train ``method`` for every seed and fold into ``out``; the mean training curve and,
    for methods with a ``prepare`` term (EqualizeIR) given the test ``candidates``, each seed
    folder's run of the weak learners (fold k's f_B reranks fold k's test candidates).

    Given the test ``candidates``, each saved fold model is reloaded from ``out`` (as users
    get it) and reranks its fold's candidates in the job that trained it (so reranking runs
    in the ``train.workers`` processes too), and the ``transfer`` candidates (the held-out
    collection) with the models ``transfer.fold_models`` names: each seed's
    :class:`SeedRuns`.

    ``features``: precomputed frozen-bottom states of the texts (the ``features`` stage).
    ``train_log``: the method's DVCLive log; each model logs as ``[seed-<n>/]fold-<k>``.
    ``groups``: the corpus's ``doc_id, group`` (F/M/N), the documents' versions that
    counterfactual loss terms read (``version_pos``/``version_neg``)."""
    jobs = []
    for seed, sub in params.train.seed_runs():
        folds = folds_of(ordered, seed if sub else None)
        # the test lists of this seed's fold assignment (dataset.<source>.splits)
        lists = None if candidates is None else for_seed(candidates, params.train.seeds, seed)
        for fold, triples in folds:
            test = _fold_rows(lists, fold) if lists is not None else None
            first = params.transfer.fold_models == "all" or fold == folds[0][0]
            moved = transfer is not None and test is not None and first
            jobs.append(Job(seed, sub, fold, triples, test, moved))
        if lists is not None:
            _check_folds(lists, [fold for fold, _ in folds])
    context = MethodContext(params, method, texts, doc_scores, out, features or {}, transfer,
                            groups)  # fmt: skip
    results = run_jobs(train_job, context, jobs, workers_for(params), params.train.threads,
                       train_log.run if train_log else None)  # fmt: skip
    curves = [r.curve.with_columns(pl.lit(j.seed).alias("seed"), pl.lit(j.fold).alias("fold"))
              for j, r in zip(jobs, results, strict=True)]  # fmt: skip
    values = [c for c in curves[0].columns if c not in ("step", "seed", "fold")]
    curve = pl.concat(curves).group_by("step", maintain_order=True).agg(pl.col(values).mean())
    phases = Phases()
    for r in results:
        phases.add(r.seconds)
    return Trained(curve, weak_runs(jobs, results), _seed_runs(jobs, results), phases.seconds)


def workers_for(params: Params) -> int:
    """``train.workers``, except 1 where processes would share one device: a GPU, or
    ``torchrun`` (``train.devices`` > 1)."""
    t = params.train
    if t.devices > 1 or resolve_device(t.device).type != "cpu":
        return 1
    return t.workers


def train_job(ctx: MethodContext, job: Job, sink: StepSink | None) -> Result:
    """Train one (seed, fold) model and save it to ``<out>/<seed folder>/fold-<k>``; with
    the fold's test candidates, the saved model reloaded reranks them (and the held-out
    collection when ``job.transfer``)."""
    params, method, m = ctx.params, ctx.method, ctx.params.methods[ctx.method]
    log.info("train@%s: seed %d, fold %d, %d triples", method, job.seed, job.fold,
             job.triples.height)  # fmt: skip
    clock = Phases()
    prep = Prepared(params, m.psi, job.triples, ctx.texts, ctx.doc_scores, job.seed,
                    ctx.features, job.test if _prepares(m.loss) else None)  # fmt: skip
    pairs: PairScores = {}
    with clock("weak learner"):
        for name, cfg in m.terms:  # per-pair values (EqualizeIR's weak learner)
            prepare = get_record(name).prepare
            if prepare is not None:
                pairs |= prepare(prep, cfg)
    with clock("model load"):
        ranker = build_ranker(params.model, job.seed)
        ranker.bind(*ctx.texts)
        ranker.preload(ctx.features)
    with clock("groups"):
        needs = objective_needs(m.terms)
        bias = doc_bias(ctx.doc_scores, m.psi, ctx.groups)
        bias = {k: v for k, v in bias.items() if k in needs}
        cfg = dataclasses.replace(params.train, seed=job.seed)
        groups = prepare_groups(job.triples, cfg.group_size, bias, pairs or None)
    every = params.train.checkpoint_every
    ckpt = paths.checkpoints(method, job.sub, job.fold)  # outside the outs: kept
    with clock("training steps"):
        curve = train_model(
            ranker, groups, m.terms, cfg,
            checkpoint_dir=ckpt if every else None, checkpoint_every=every, log=sink,
        )  # fmt: skip
    if not distributed.is_main():  # under torchrun, rank 0 alone writes and reranks
        return Result(curve, prep.runs.get("weak"), seconds=clock.seconds)
    with clock("save"):
        ranker.save(ctx.out / job.name)
        write_training_card(ctx.out / job.name, method, job.fold, job.seed, params=params)
        clear_checkpoint(ckpt)
    run = moved = None
    if job.test is not None:
        with clock("reload"):
            saved = load_ranker(ctx.out / job.name)
            saved.bind(*ctx.texts)
            saved.preload(ctx.features)
        with clock("rerank"):
            run = rerank(saved, job.test, params.rerank.batch_size)
        if job.transfer and ctx.transfer is not None:
            with clock("rerank transfer"):
                moved = rerank(saved, ctx.transfer.drop("fold", strict=False),
                               params.rerank.batch_size)  # fmt: skip
                moved = moved.with_columns(pl.lit(job.fold, dtype=pl.Int64).alias("fold"))
    return Result(curve, prep.runs.get("weak"), run, moved, clock.seconds)


def _check_folds(candidates: pl.DataFrame, trained: Sequence[int]) -> None:
    """Every fold of the test candidates has a model to rerank it."""
    if "fold" not in candidates.columns:
        return
    missing = sorted(set(candidates["fold"].unique().to_list()) - set(trained))
    if missing:
        raise InputError(
            f"data/candidates.parquet has test queries in fold(s) {missing}, which have no "
            f"training triples in the ordered triples (folds {sorted(trained)}); rerun the "
            "order stage (`dvc repro`) or check the method's ordering"
        )


def _prepares(loss: Sequence[str]) -> bool:
    """Whether a term of the loss has a ``prepare`` hook (EqualizeIR's weak learner)."""
    return any(get_record(name).prepare is not None for name in loss)


def _seed_runs(jobs: Sequence[Job], results: Sequence[Result]) -> list[SeedRuns]:
    """Each seed's fold runs concatenated in fold order (as ``rerank_folds`` makes them)."""
    out: list[SeedRuns] = []
    for seed, sub in dict.fromkeys((j.seed, j.sub) for j in jobs):
        mine = sorted(((j.fold, r) for j, r in zip(jobs, results, strict=True)
                       if (j.seed, j.sub) == (seed, sub) and r.run is not None),
                      key=lambda fold_result: fold_result[0])  # fmt: skip
        if not mine:
            continue
        moved = [r.transfer_run for _, r in mine if r.transfer_run is not None]
        out.append(SeedRuns(seed, sub, pl.concat([r.run for _, r in mine if r.run is not None]),
                            pl.concat(moved) if moved else None))  # fmt: skip
    return out


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
