"""`curriculum`: the bias-aware curriculum in the direction the method sets (SPEC §6.1)."""

from __future__ import annotations

import polars as pl

from pipeline.ordering._curriculum import curriculum_order
from pipeline.ordering.common import OrderingContext


def curriculum(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, ctx: OrderingContext
) -> pl.DataFrame:
    """``curriculum_low_high`` or ``curriculum_high_low`` as ``ctx.direction`` says.

    ``ctx.direction`` ``None`` means ``low_to_high``. Adds column ``bucket``.
    Paper: bias-aware curriculum learning for neural rankers (the curriculum paper, SPEC §6.1).
    Inputs: triples, ``doc_scores``; ``ctx.direction``, ``ctx.psi``, ``ctx.n_buckets``,
    ``ctx.mu``, ``ctx.sigma``, ``ctx.seed``.
    """
    return curriculum_order(triples, doc_scores, ctx, ctx.direction or "low_to_high")
