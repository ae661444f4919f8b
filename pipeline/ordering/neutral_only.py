"""`neutral_only`: train only on triples whose positive is unbiased, Ψ⁺ = 0 (SPEC §6.1)."""

from __future__ import annotations

import polars as pl

from pipeline.ordering.common import Inputs, NoConfig, Ordering, filtered_by_psi


def neutral_only(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, cfg: NoConfig, inp: Inputs
) -> pl.DataFrame:
    """The triples with Ψ⁺ = 0, in a seeded random order; the others are dropped.

    No such triple raises ``ValueError``.
    Paper: bias-aware curriculum learning for neural rankers (the curriculum paper's
    neutral-only ablation, SPEC §6.1).
    Inputs: triples, ``doc_scores``; ``inp.psi``, ``inp.seed``; no params.
    """
    return filtered_by_psi(triples, doc_scores, inp, pl.col("psi") == 0.0, "neutral_only")


RECORD = Ordering("neutral_only", neutral_only, filters=True)
