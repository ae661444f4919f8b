"""Shared pieces of the orderings: the context they receive and Ψ lookup."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

PSI_SOURCE = {"bool_abs": "psi_bool", "tf_abs": "psi_tf", "tc_abs": "psi_tc"}


@dataclass(frozen=True)
class OrderingContext:
    """What an ordering may read besides the triples: the Ψ column and a seed."""

    psi: str = "bool_abs"
    seed: int = 0


def with_positive_psi(triples: pl.DataFrame, doc_scores: pl.DataFrame, psi: str) -> pl.DataFrame:
    """Attach `psi` = |Ψ| of each triple's positive document (0 for unscored documents)."""
    col = PSI_SOURCE[psi]
    scores = doc_scores.select(
        pl.col("doc_id").alias("pos_doc_id"), pl.col(col).abs().cast(pl.Float64).alias("psi")
    )
    out = triples.join(scores, on="pos_doc_id", how="left", maintain_order="left")
    return out.with_columns(pl.col("psi").fill_null(0.0))
