"""`shuffle`: a seeded uniform random order (the baseline of every paper)."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipeline.ordering.common import OrderingContext, with_positive_psi


def shuffle(triples: pl.DataFrame, doc_scores: pl.DataFrame, ctx: OrderingContext) -> pl.DataFrame:
    """Uniformly shuffle the triples with `ctx.seed`; every triple appears exactly once."""
    rng = np.random.default_rng(ctx.seed)
    perm = rng.permutation(triples.height)
    out = with_positive_psi(triples, doc_scores, ctx.psi)[perm]
    return out.with_columns(pl.int_range(0, pl.len(), dtype=pl.Int64).alias("position"))
