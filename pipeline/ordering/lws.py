"""`lws`: light-weight bias-aware negative sampling (SPEC §6.4)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated

import numpy as np
import polars as pl

from pipeline.config import Checked, Range
from pipeline.errors import InputError
from pipeline.ordering.common import Inputs, Ordering, rng, shuffled, with_positive_psi
from pipeline.schemas import PSI_SOURCE

logger = logging.getLogger(__name__)

NAME = "lws"
SOURCE = "lws"
"""``source`` value of a triple whose negative was replaced."""


def biased_pool(
    triples: pl.DataFrame,
    doc_scores: pl.DataFrame,
    candidates: pl.DataFrame,
    qrels: pl.DataFrame,
    psi: str,
    top: int,
) -> pl.DataFrame:
    """Per query its ``top`` most biased non-relevant BM25 candidates: query_id, doc_id.

    Biased: |Ψ| > 0 in ``psi``'s column; most biased first, ties by BM25 rank. Non-relevant:
    not judged relevant (relevance > 0) in ``qrels`` and not a positive of any triple of the
    query. Rows are sorted by query.
    """
    col = PSI_SOURCE[psi]
    bias = doc_scores.select(
        pl.col("doc_id").cast(pl.String), pl.col(col).abs().cast(pl.Float64).alias("_bias")
    )
    relevant = pl.concat(
        [
            qrels.filter(pl.col("relevance") > 0).select(
                pl.col("query_id").cast(pl.String), pl.col("doc_id").cast(pl.String)
            ),
            triples.select(
                pl.col("query_id").cast(pl.String),
                pl.col("pos_doc_id").cast(pl.String).alias("doc_id"),
            ),
        ]
    ).unique()
    pool = (
        candidates.select(
            pl.col("query_id").cast(pl.String), pl.col("doc_id").cast(pl.String), "rank"
        )
        .join(bias, on="doc_id", how="inner")
        .filter(pl.col("_bias") > 0)
        .join(relevant, on=["query_id", "doc_id"], how="anti")
        .sort(["query_id", "_bias", "rank", "doc_id"], descending=[False, True, False, False])
    )
    return pool.filter(pl.int_range(pl.len()).over("query_id") < top).select("query_id", "doc_id")


def replace_negatives(
    triples: pl.DataFrame, pool: pl.DataFrame, rate: float, rng: np.random.Generator
) -> pl.DataFrame:
    """Replace the negative of ``round(rate·n)`` seeded random triples by a pool document.

    The new negative is uniform among the query's pool documents; a chosen triple whose
    query has no pool document keeps its negative. Replaced rows get ``source = "lws"``.
    """
    n = triples.height
    chosen = np.zeros(n, dtype=bool)
    chosen[rng.choice(n, size=round(rate * n), replace=False)] = True
    draw = rng.random(n)
    spans = (
        pool.with_row_index("_row")
        .group_by("query_id", maintain_order=True)
        .agg(pl.col("_row").min().alias("_start"), pl.len().alias("_count"))
    )
    joined = triples.with_columns(pl.col("query_id").cast(pl.String)).join(
        spans, on="query_id", how="left", maintain_order="left"
    )
    start = joined["_start"].fill_null(0).to_numpy().astype(np.int64)
    count = joined["_count"].fill_null(0).to_numpy().astype(np.int64)
    swap = chosen & (count > 0)
    pick = start + np.floor(draw * np.maximum(count, 1)).astype(np.int64)
    new = triples["neg_doc_id"].cast(pl.String).to_numpy().copy()
    new[swap] = pool["doc_id"].to_numpy()[pick[swap]]
    logger.info(
        "lws: replaced %d of %d negatives (%d chosen, %d of them without a biased candidate)",
        int(swap.sum()), n, int(chosen.sum()), int((chosen & ~swap).sum()),
    )  # fmt: skip
    kept = pl.col("source") if "source" in triples.columns else pl.lit("triples")
    return (
        triples.with_columns(
            pl.Series("neg_doc_id", new, dtype=pl.String), pl.Series("_swap", swap)
        )
        .with_columns(pl.when("_swap").then(pl.lit(SOURCE)).otherwise(kept).alias("source"))
        .drop("_swap")
    )


@dataclass(frozen=True)
class LwsConfig(Checked):
    """``orderings.lws``: ``rate`` = share of triples whose negative is replaced; ``top`` =
    draw among the query's ``top`` most biased non-relevant BM25 candidates; ``by_query``:
    shuffled as ``orderings.shuffle.by_query`` does (set both alike, so that ``lws`` differs
    from the baseline only in its negatives)."""

    rate: Annotated[float, Range(ge=0, le=1)] = 0.6
    top: Annotated[int, Range(ge=1)] = 5
    by_query: bool = True


def lws(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, cfg: LwsConfig, inp: Inputs
) -> pl.DataFrame:
    """For a share ``cfg.rate`` of triples, swap the negative for a highly biased one.

    The replacement is drawn uniformly among the query's ``cfg.top`` non-relevant BM25
    candidates of largest |Ψ| (Ψ > 0; column ``inp.psi``). The result is shuffled with
    ``inp.seed`` as the baseline is (``cfg.by_query``); ``source`` marks replaced triples ``"lws"``.
    **Decision** (the paper does not fix it): draw among the top ``top`` (default 5).
    Paper: Bigdeli et al., "A Light-Weight Strategy for Restraining Gender Biases in Neural
    Rankers", ECIR 2022 (code: aminbigdeli/bias_aware_neural_ranking).
    Inputs: triples, ``doc_scores``; tables ``train_candidates`` (query_id, doc_id, rank: the
    training queries' BM25 candidates) and ``qrels`` (query_id, doc_id, relevance);
    ``orderings.lws`` (``rate``, ``top``, ``by_query``); ``inp.psi``, ``inp.seed``.
    """
    candidates = inp.table("train_candidates", ("query_id", "doc_id", "rank"), NAME)
    if candidates.height == 0:
        raise InputError(
            "ordering 'lws' draws biased negatives from the training queries' BM25 candidates, "
            "but data/train_candidates.parquet is empty (params key candidates.train_top_k is "
            "0); set it to a positive number (e.g. 100) or null (= candidates.top_k)"
        )
    qrels = inp.table("qrels", ("query_id", "doc_id", "relevance"), NAME)
    pool = biased_pool(triples, doc_scores, candidates, qrels, inp.psi, cfg.top)
    gen = rng(inp.seed, 1)  # independent of the shuffle's stream
    replaced = replace_negatives(triples, pool, cfg.rate, gen)
    return shuffled(with_positive_psi(replaced, doc_scores, inp.psi), inp.seed, cfg.by_query)


RECORD = Ordering(
    NAME, lws, LwsConfig, needs=("train_candidates", "qrels"), replaces_negatives=True
)
