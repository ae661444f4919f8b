"""`curriculum_high_low`: high-Ψ triples first, neutral ones delayed (SPEC §6.1)."""

from __future__ import annotations

import polars as pl

from pipeline.ordering._curriculum import check_direction, curriculum_order
from pipeline.ordering.common import OrderingContext

NAME = "curriculum_high_low"


def curriculum_high_low(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, ctx: OrderingContext
) -> pl.DataFrame:
    """Bias-aware curriculum from biased to neutral positives (the reverse direction).

    As ``curriculum_low_high`` with μ = max Ψ unless set: buckets of high mean Ψ are drawn
    first. Adds column ``bucket`` (0 = lowest Ψ).
    Paper: bias-aware curriculum learning for neural rankers (the curriculum paper, SPEC §6.1).
    Inputs: triples, ``doc_scores``; ``ctx.psi``, ``ctx.n_buckets``, ``ctx.mu``,
    ``ctx.sigma``, ``ctx.seed``.
    """
    check_direction(ctx, "high_to_low", NAME)
    return curriculum_order(triples, doc_scores, ctx, "high_to_low")
