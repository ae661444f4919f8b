"""Rerank first-stage candidates with a trained cross-encoder (candidates + model → run).

Sequences are scored in batches of similar length (less padding), then put back in candidate
order. Within a query the run is sorted by score descending; ties keep the candidate order
(SPEC §1).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence

import polars as pl
import torch
from transformers import PreTrainedTokenizerBase

from pipeline.progress import progress
from pipeline.train.batching import Pair, PairEncoder, collate
from pipeline.train.model import CrossEncoder, resolve_device

logger = logging.getLogger(__name__)

CANDIDATE_COLUMNS = ("query_id", "doc_id", "rank", "score")
RUN_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}


def score_pairs(
    model: CrossEncoder,
    pairs: list[Pair],
    batch_size: int,
    device: torch.device,
    pad_id: int,
) -> list[float]:
    """Model scores of ``pairs`` in input order; batches are formed over length-sorted pairs."""
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
    scores = [math.nan] * len(pairs)
    use_bf16 = device.type == "cuda"
    with progress(total=len(pairs), desc="rerank", unit="seq") as bar:
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            inputs = {k: v.to(device) for k, v in collate([pairs[i] for i in idx], pad_id).items()}
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_bf16):
                out = model(**inputs).float().cpu().tolist()
            for i, value in zip(idx, out, strict=True):
                scores[i] = value
            bar.update(len(idx))
    return scores


def score_ids(
    model: CrossEncoder,
    tokenizer: PreTrainedTokenizerBase,
    keys: Sequence[tuple[str, str]],
    texts: tuple[Mapping[str, str], Mapping[str, str]],
    lengths: tuple[int, int],
    batch_size: int,
    device: str | torch.device,
) -> list[float]:
    """Model scores of ``(query_id, doc_id)`` pairs in order, in inference mode on ``device``.

    ``texts`` = (queries, docs) by id; ``lengths`` = (max_len, q_len). Unknown ids raise
    ``ValueError``. The model moves to ``device`` and keeps its train/eval mode.
    """
    queries, docs = texts
    max_len, q_len = lengths
    encoder = PairEncoder(tokenizer, max_len, q_len)
    encoder.add(queries, docs, (q for q, _ in keys), (d for _, d in keys))
    pairs = [encoder.pair(q, d) for q, d in keys]
    dev = resolve_device(device)
    was_training = model.training
    model.to(dev).eval()
    try:
        with torch.inference_mode():
            return score_pairs(model, pairs, batch_size, dev, encoder.pad_id) if pairs else []
    finally:
        model.train(was_training)


def _check_finite(cands: pl.DataFrame, scores: list[float]) -> None:
    for row, value in enumerate(scores):
        if not math.isfinite(value):
            query_id, doc_id = cands["query_id"][row], cands["doc_id"][row]
            raise ValueError(
                f"model score {value} for query {query_id!r}, doc {doc_id!r} is not finite; "
                "the model weights are probably broken (diverged training?)"
            )


def rank_run(cands: pl.DataFrame, scores: list[float]) -> pl.DataFrame:
    """Run from candidates and new scores: per query by score descending, ties by candidate rank.

    Queries keep the order of their first appearance in ``cands``; ``rank`` restarts at 1.
    """
    return (
        cands.select("query_id", "doc_id", pl.col("rank").alias("_cand_rank"))
        .with_columns(
            pl.Series("score", scores, dtype=pl.Float64),
            pl.int_range(pl.len()).alias("_row"),
        )
        .with_columns(pl.col("_row").min().over("query_id").alias("_query_pos"))
        .sort(["_query_pos", "score", "_cand_rank", "_row"], descending=[False, True, False, False])
        .with_columns((pl.int_range(pl.len(), dtype=pl.Int64).over("query_id") + 1).alias("rank"))
        .select(list(RUN_SCHEMA))
    )


def _validated(candidates: pl.DataFrame, batch_size: int) -> pl.DataFrame:
    missing = set(CANDIDATE_COLUMNS) - set(candidates.columns)
    if missing:
        raise ValueError(f"candidates lack columns {sorted(missing)}; has {candidates.columns}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}")
    return candidates.with_columns(pl.col("query_id", "doc_id").cast(pl.String))


def rerank(
    model: CrossEncoder,
    tokenizer: PreTrainedTokenizerBase,
    candidates: pl.DataFrame,
    queries: Mapping[str, str],
    docs: Mapping[str, str],
    batch_size: int = 32,
    max_len: int = 128,
    q_len: int = 32,
    device: str | torch.device = "auto",
) -> pl.DataFrame:
    """Score every candidate ``(query_id, doc_id)`` and return the run.

    ``candidates``: ``query_id, doc_id, rank, score`` (first stage; ``rank`` breaks ties).
    Returns ``query_id, doc_id, score`` (f64), ``rank`` (i64, 1 = best). Unknown ids and
    non-finite scores raise ``ValueError`` naming the query/document.
    """
    cands = _validated(candidates, batch_size)
    qids, dids = cands["query_id"].to_list(), cands["doc_id"].to_list()
    keys = list(zip(qids, dids, strict=True))
    start = time.perf_counter()
    texts, lengths = (queries, docs), (max_len, q_len)
    scores = score_ids(model, tokenizer, keys, texts, lengths, batch_size, device)
    seconds = max(time.perf_counter() - start, 1e-9)
    _check_finite(cands, scores)
    n_queries = len(set(qids))
    rate = len(keys) / seconds
    msg = "reranked %d sequences of %d queries in %.1f s (%.1f seq/s) on %s"
    logger.info(msg, len(keys), n_queries, seconds, rate, resolve_device(device))
    return rank_run(cands, scores).cast(RUN_SCHEMA)  # type: ignore[arg-type]
