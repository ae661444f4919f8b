"""`curriculum_low_high`: low-Ψ triples first, biased ones delayed (SPEC §6.1)."""

from __future__ import annotations

import polars as pl

from pipeline.ordering._curriculum import check_direction, curriculum_order
from pipeline.ordering.common import OrderingContext

NAME = "curriculum_low_high"


def curriculum_low_high(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, ctx: OrderingContext
) -> pl.DataFrame:
    """Bias-aware curriculum from neutral to biased positives.

    Triples sorted by Ψ of the positive are split into ``n_buckets`` equal buckets with
    weights ``P_i ∝ exp(−(x_i − μ)²/(2σ²))`` (``x_i`` = bucket mean Ψ, μ = min Ψ unless
    set); the order is drawn by the SPEC's bucket sampler, so every triple is used once and
    high-Ψ triples are only delayed. Adds column ``bucket`` (0 = lowest Ψ).
    Paper: bias-aware curriculum learning for neural rankers (the curriculum paper, SPEC §6.1).
    Inputs: triples, ``doc_scores``; ``ctx.psi`` (default ``tf_abs`` in the paper),
    ``ctx.n_buckets``, ``ctx.mu``, ``ctx.sigma``, ``ctx.seed``.
    """
    check_direction(ctx, "low_to_high", NAME)
    return curriculum_order(triples, doc_scores, ctx, "low_to_high")
