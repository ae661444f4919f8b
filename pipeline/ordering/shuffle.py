"""`shuffle`: a seeded uniform random order (the baseline of every paper)."""

from __future__ import annotations

import polars as pl

from pipeline.ordering.common import OrderingContext, seeded_shuffle, with_positive_psi


def shuffle(triples: pl.DataFrame, doc_scores: pl.DataFrame, ctx: OrderingContext) -> pl.DataFrame:
    """Uniformly shuffle the triples with `ctx.seed`; every triple appears exactly once.

    Paper: the random order of every baseline (OpenMatch recipe, SPEC §5).
    Inputs: triples, ``doc_scores`` (for the recorded ``psi``); ``ctx.psi``, ``ctx.seed``.
    """
    return seeded_shuffle(with_positive_psi(triples, doc_scores, ctx.psi), ctx.seed)
