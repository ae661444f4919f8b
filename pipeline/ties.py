"""Ties, handled in one place (SPEC §1 "Ties"): the rules that order documents of equal score,
and tie-averaged position weights (McSherry & Najork, ECIR 2008, "Computing information
retrieval performance measures efficiently in the presence of tied scores").

**Tie-breaking rules** (:func:`rank_by_score`: score descending, then the rule's columns,
``rank`` 1..n per query): a run read from a file or given to ``fair-eval`` keeps the input
order (:func:`in_input_order`); a reranked run keeps the first-stage (candidate) order
(``pipeline.rerank``); effectiveness metrics rank as trec_eval does, equal scores by document
id descending (:func:`trec_eval_order`, docs/decisions.md). No fairness number depends on any
of them: the fairness metrics average their weights over each tie block, as follows.

A tie block is the set of a query's run documents with exactly equal scores. Every document of
a block gets the mean of the per-position weights of the ranks the block occupies (positions
past a cut-off weigh 0), so any metric that is linear in per-rank contributions becomes the
expectation over all orders of the tied documents, and no fairness number depends on the
order in which tied documents happen to sit in a file. Every rank-weighted fairness metric
(ARaB, NFaiRR, LIWC, AWRF) and the counterfactual gap build their weights here, once.

A position weight is a vectorised function `(rank, n) -> weight` of the 1-based rank and the
length n of the query's run (numpy arrays of equal length).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from pipeline.errors import InputError

PositionWeight = Callable[[np.ndarray, np.ndarray], np.ndarray]


def rank_by_score(
    frame: pl.DataFrame,
    ties: Sequence[str],
    *,
    descending: bool = False,
    order: str = "query_id",
) -> pl.DataFrame:
    """``frame`` sorted by ``order`` (the query column, or a query's position), score
    descending, equal scores by the columns ``ties`` (ascending, or ``descending``), with
    ``rank`` (Int64, 1 = best) restarting per ``query_id``: every tie rule of the project."""
    columns = [order, "score", *ties]
    flags = [False, True, *[descending] * len(ties)]
    rank = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query_id").alias("rank")
    return frame.sort(columns, descending=flags).with_columns(rank)


def in_input_order(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` ranked by score, equal scores in their input order (a run file's, SPEC §1)."""
    return rank_by_score(frame.with_row_index("_order"), ["_order"]).drop("_order")


def trec_eval_order(run: pl.DataFrame) -> pl.DataFrame:
    """`run` with `rank` recomputed as trec_eval ranks: score descending, then doc id
    descending (the tie rule of trec_eval's `comp_sim_docno`)."""
    return rank_by_score(run, ["doc_id"], descending=True)

BLOCK = "tie_block"  # first (best) rank of the document's tie block


def tie_averaged(
    run: pl.DataFrame, weights: Mapping[str, PositionWeight], depth: int | None = None
) -> pl.DataFrame:
    """`query_id, doc_id, tie_block, <name>...`: each weight averaged over the tie block.

    `run` holds `query_id, doc_id, score, rank` with ranks 1..n per query (as `EvalInputs`
    validates). Only documents of tie blocks that reach into the top `depth` are returned (all
    of them when `depth` is None), so a block that straddles the cut-off keeps its members
    below it. Rows are sorted by `query_id, tie_block, doc_id`: a float sum over them adds in
    an order that does not depend on how the tied documents were ordered in the run.
    """
    clash = set(weights) & {"query_id", "doc_id", "score", "rank", "_n", BLOCK}
    if clash:
        raise InputError(f"tie_averaged: weight names {sorted(clash)} clash with run columns")
    rows = run.select("query_id", "doc_id", "score", "rank").sort("query_id", "rank")
    rows = rows.with_columns(
        pl.len().over("query_id").cast(pl.Int64).alias("_n"),
        pl.col("rank").min().over("query_id", "score").alias(BLOCK),
    )
    if depth is not None:
        rows = rows.filter(pl.col(BLOCK) <= depth)
    ranks, lengths = rows["rank"].to_numpy(), rows["_n"].to_numpy()
    per_position = [
        pl.Series(name, np.asarray(fn(ranks, lengths), dtype=np.float64))
        for name, fn in weights.items()
    ]
    # Rows are in rank order here, so each block mean adds its positions in one fixed order.
    rows = rows.with_columns(per_position).with_columns(
        pl.col(name).mean().over("query_id", "score") for name in weights
    )
    return rows.select("query_id", "doc_id", BLOCK, *weights).sort("query_id", BLOCK, "doc_id")


def cut(k: int, weight: Callable[[np.ndarray], np.ndarray]) -> PositionWeight:
    """`weight(rank)` for ranks <= k, 0 past the cut-off."""

    def fn(rank: np.ndarray, n: np.ndarray) -> np.ndarray:
        inside = rank <= k
        return np.where(inside, weight(np.where(inside, rank, 1)), 0.0)

    return fn


def log_discount(rank: np.ndarray) -> np.ndarray:
    """NFaiRR's `p(r) = 1 / log2(r + 1)` (Rekabsaz et al. 2021)."""
    return 1.0 / np.log2(rank + 1.0)


def fair_discount(rank: np.ndarray, dtype: type[np.floating] = np.float64) -> np.ndarray:
    """The discount `1 / log2(max(r, 2))` of 1-based ranks, in `dtype`: AWRF, expected
    exposure and the TREC Fair 2022 track (whose code computes it in float32), the one place
    it is written.

    In float32 the logarithm is the correctly rounded one on every CPU: numpy's float32
    `log2` dispatches by CPU (its AVX-512 kernel is off by 1 ULP at ranks 6, 12, 99, 173, …;
    numpy allows 3 ULP), so it is taken in float64 (numpy: within 1 ULP on every path) and
    rounded once; for every rank up to 10⁶ the float64 value is > 64 ULP away from a float32
    rounding boundary, so the rounding cannot depend on the CPU
    (tests/unit/test_trec_fair2022.py; docs/decisions.md, "A CPU-independent discount").
    The reciprocal is an IEEE division, correctly rounded in either type."""
    ranks = np.maximum(np.asarray(rank), 2).astype(np.float64)
    return np.reciprocal(np.log2(ranks).astype(dtype))


def mean_weight(k: int) -> PositionWeight:
    """`1 / k'` for ranks <= k' = min(k, n): the mean over the top k (LIWC)."""

    def fn(rank: np.ndarray, n: np.ndarray) -> np.ndarray:
        top = np.minimum(k, n)
        return np.where(rank <= top, 1.0 / top, 0.0)

    return fn


def arab_weight(k: int) -> PositionWeight:
    """ARaB@k as a linear weight: `w(r) = (1/k') Σ_{t=r..k'} 1/t`, `k' = min(k, n)`.

    `ARaB_q@k = (1/k') Σ_{t<=k'} (1/t) Σ_{r<=t} x_r = Σ_r x_r w(r)` (Rekabsaz & Schedl 2020).
    """

    def fn(rank: np.ndarray, n: np.ndarray) -> np.ndarray:
        top = np.minimum(k, n)
        out = np.zeros(rank.shape, dtype=np.float64)
        for kk in np.unique(top):
            # tail[r - 1] = Σ_{t=r..kk} 1/t, summed from the small terms up
            tail = np.cumsum(1.0 / np.arange(kk, 0, -1, dtype=np.float64))[::-1]
            sel = (top == kk) & (rank <= kk)
            out[sel] = tail[rank[sel] - 1] / kk
        return out

    return fn


def identity_rank(rank: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The rank itself: tie-averaged, the mean rank of the document's tie block."""
    return rank.astype(np.float64)
