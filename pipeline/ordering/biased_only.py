"""`biased_only`: train only on triples whose positive is biased, Ψ⁺ > 0 (SPEC §6.1)."""

from __future__ import annotations

import polars as pl

from pipeline.ordering.common import Inputs, Ordering, ShuffleConfig, filtered_by_psi


def biased_only(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, cfg: ShuffleConfig, inp: Inputs
) -> pl.DataFrame:
    """The triples with Ψ⁺ > 0, shuffled as ``shuffle`` does
    (``orderings.biased_only.by_query``); the others are dropped.

    No such triple raises ``ValueError``.
    Paper: bias-aware curriculum learning for neural rankers (the curriculum paper's
    biased-only ablation, SPEC §6.1).
    Inputs: triples, ``doc_scores``; ``inp.psi``, ``inp.seed``; ``by_query``.
    """
    return filtered_by_psi(
        triples, doc_scores, inp, pl.col("psi") > 0.0, "biased_only", cfg.by_query
    )


RECORD = Ordering("biased_only", biased_only, ShuffleConfig, filters=True)
