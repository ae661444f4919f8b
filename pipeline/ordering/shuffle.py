"""`shuffle`: a seeded uniform random order (the baseline of every paper)."""

from __future__ import annotations

import polars as pl

from pipeline.ordering.common import Inputs, Ordering, ShuffleConfig, shuffled, with_positive_psi


def shuffle(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, cfg: ShuffleConfig, inp: Inputs
) -> pl.DataFrame:
    """Shuffle the triples with ``inp.seed``; every triple appears exactly once.

    Paper: the random order of every baseline (OpenMatch recipe, SPEC §5).
    Inputs: triples, ``doc_scores`` (for the recorded ``psi``); ``inp.psi``, ``inp.seed``
    (``train.seed``); ``orderings.shuffle.by_query``.
    """
    scored = with_positive_psi(triples, doc_scores, inp.psi)
    return shuffled(scored, inp.seed, cfg.by_query)


RECORD = Ordering("shuffle", shuffle, ShuffleConfig)

__all__ = ["RECORD", "ShuffleConfig", "shuffle"]
