"""Rerank first-stage candidates with a ranker of any family (candidates + model → run).

Within a query the run is sorted by score descending; ties keep the candidate order (SPEC §1).
With folds (SPEC §7) each fold's candidates are reranked by that fold's model.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import polars as pl
import torch
from torch import Tensor

from pipeline import io, paths, schemas
from pipeline.errors import InputError
from pipeline.models.base import Key, Ranker
from pipeline.params import Params
from pipeline.provenance import build_metadata
from pipeline.retrieval.folds import for_seed
from pipeline.ties import rank_by_score

logger = logging.getLogger(__name__)

CANDIDATE_COLUMNS = ("query_id", "doc_id", "rank", "score")
RUN_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}


def _check_finite(cands: pl.DataFrame, scores: list[float]) -> None:
    for row, value in enumerate(scores):
        if not math.isfinite(value):
            query_id, doc_id = cands["query_id"][row], cands["doc_id"][row]
            raise InputError(
                f"model score {value} for query {query_id!r}, doc {doc_id!r} is not finite; "
                "the model weights are probably broken (diverged training?)"
            )


def rank_run(cands: pl.DataFrame, scores: list[float]) -> pl.DataFrame:
    """Run from candidates and new scores: per query by score descending, ties by candidate rank.

    Queries keep the order of their first appearance in ``cands``; ``rank`` restarts at 1.
    """
    frame = (
        cands.select("query_id", "doc_id", pl.col("rank").alias("_cand_rank"))
        .with_columns(
            pl.Series("score", scores, dtype=pl.Float64),
            pl.int_range(pl.len()).alias("_row"),
        )
        .with_columns(pl.col("_row").min().over("query_id").alias("_query_pos"))
    )
    ranked = rank_by_score(frame, ["_cand_rank", "_row"], order="_query_pos")
    return ranked.select(list(RUN_SCHEMA))


def _validated(candidates: pl.DataFrame, batch_size: int) -> pl.DataFrame:
    missing = set(CANDIDATE_COLUMNS) - set(candidates.columns)
    if missing:
        raise InputError(f"candidates lack columns {sorted(missing)}; has {candidates.columns}")
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1; got {batch_size}")
    return candidates.with_columns(pl.col("query_id", "doc_id").cast(pl.String))


def rerank(ranker: Ranker, candidates: pl.DataFrame, batch_size: int = 64) -> pl.DataFrame:
    """Score every candidate ``(query_id, doc_id)`` with a bound ranker; the run.

    ``candidates``: ``query_id, doc_id, rank, score`` (first stage; ``rank`` breaks ties).
    Returns ``query_id, doc_id, score`` (f64), ``rank`` (i64, 1 = best). The family decides
    how work is shared (a bi-encoder encodes each distinct document once). Unknown ids and
    non-finite scores raise ``ValueError`` naming the query/document.
    """
    cands = _validated(candidates, batch_size)
    qids, dids = cands["query_id"].to_list(), cands["doc_id"].to_list()
    start = time.perf_counter()
    ranker.eval()
    with torch.inference_mode():
        scores = ranker.score_many(qids, dids, batch_size).double().tolist()
    seconds = max(time.perf_counter() - start, 1e-9)
    _check_finite(cands, scores)
    msg = "reranked %d pairs of %d queries in %.1f s (%.1f pairs/s) with %s"
    logger.info(msg, len(qids), len(set(qids)), seconds, len(qids) / seconds, ranker.arch)
    return rank_run(cands, scores).cast(RUN_SCHEMA)  # type: ignore[arg-type]


def rerank_folds(
    load: Callable[[int], Ranker],
    candidates: pl.DataFrame,
    texts: tuple[Mapping[str, str], Mapping[str, str]],
    batch_size: int,
    features: Mapping[Key, Tensor] | None = None,
    transfer: pl.DataFrame | None = None,
    transfer_folds: str = "all",
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """One run over every fold: fold k's candidates reranked by ``load(k)`` (SPEC §7);
    ``features``: precomputed frozen-bottom states of the texts (the ``features`` stage).
    ``transfer``: candidates of the held-out collection, reranked whole by every fold's
    model (``transfer_folds="all"``) or by the first fold's (``"first"``), its texts in
    ``texts``; their runs are returned with the model's ``fold``."""
    if "fold" not in candidates.columns:
        candidates = candidates.with_columns(pl.lit(0, dtype=pl.Int64).alias("fold"))
    runs: list[pl.DataFrame] = []
    moved: list[pl.DataFrame] = []
    ordered = candidates.sort("fold", maintain_order=True)  # stable: rows keep their order
    for part in ordered.partition_by("fold", maintain_order=True):
        fold = int(part["fold"][0])
        ranker = load(fold)
        ranker.bind(*texts)
        ranker.preload(features or {})
        runs.append(rerank(ranker, part.drop("fold"), batch_size))
        if transfer is not None and (transfer_folds == "all" or not moved):
            run = rerank(ranker, transfer.drop("fold", strict=False), batch_size)
            moved.append(run.with_columns(pl.lit(fold, dtype=pl.Int64).alias("fold")))
    return pl.concat(runs), (pl.concat(moved) if moved else None)


def write_method_runs(
    params: Params,
    method: str,
    load: Callable[[int, str, int], Ranker],
    candidates: pl.DataFrame,
    texts: tuple[Mapping[str, str], Mapping[str, str]],
    features: Mapping[Key, Tensor] | None = None,
    *,
    models: Path | None = None,
    out: Path | None = None,
    transfer: pl.DataFrame | None = None,
) -> None:
    """Rerank with ``load(seed, seed folder, fold)`` for every seed of ``train.seeds`` (one
    seed, ``train.seed``, for an untrained model) and write the runs (:func:`write_runs`).
    ``transfer``: the held-out collection's candidates, reranked by the fold models that
    ``transfer.fold_models`` names → ``…/transfer.parquet`` (column ``fold``)."""
    for seed, sub in params.seed_runs_of(method):
        run, moved = rerank_folds(
            lambda fold, s=seed, d=sub: load(s, d, fold),  # type: ignore[misc]
            for_seed(candidates, params.train.seeds, seed),  # its fold assignment's lists
            texts, params.rerank.batch_size, features, transfer, params.transfer.fold_models,
        )  # fmt: skip
        write_runs(params, method, seed, sub, run, moved, models=models, out=out)


def write_runs(
    params: Params,
    method: str,
    seed: int,
    sub: str,
    run: pl.DataFrame,
    moved: pl.DataFrame | None = None,
    *,
    models: Path | None = None,
    out: Path | None = None,
) -> None:
    """One seed's runs → ``<out>/<method>/[seed-<n>/]run.parquet`` and ``run.trec`` (its
    ir_metadata in ``run.trec.ir_metadata.yaml``), and the held-out collection's ``moved``
    → ``transfer.parquet``. ``models``: the trained models' root, hashed into the metadata
    (``models/<method>``)."""
    folder = paths.runs(method, sub) if out is None else out / method / sub
    io.write_table(run, str(folder / paths.run_file("").name), schemas.RUN)
    if moved is not None:
        io.write_table(moved, str(folder / paths.transfer_run("").name), schemas.RUN)
    model_dir = models / sub if models is not None else None
    meta = build_metadata(params, method, seed=seed, model_dir=model_dir)
    io.write_trec_run(run, str(folder / "run.trec"), tag=method, metadata=meta)
    n_queries = run["query_id"].n_unique()
    logger.info("%s: %s: %d queries, %d rows", method, folder, n_queries, run.height)
