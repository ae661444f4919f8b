"""`shuffle`: a seeded uniform random order (the baseline of every paper)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipeline.ordering.common import (
    Inputs,
    Ordering,
    query_shuffle,
    seeded_shuffle,
    with_positive_psi,
)


@dataclass(frozen=True)
class ShuffleConfig:
    """``orderings.shuffle``: ``by_query`` shuffles queries and keeps each query's triples
    together (in a random order), so a training batch holds one query's counterfactual
    versions and shares their texts; ``false`` shuffles the triples themselves."""

    by_query: bool = False


def shuffle(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, cfg: ShuffleConfig, inp: Inputs
) -> pl.DataFrame:
    """Shuffle the triples with ``inp.seed``; every triple appears exactly once.

    Paper: the random order of every baseline (OpenMatch recipe, SPEC §5).
    Inputs: triples, ``doc_scores`` (for the recorded ``psi``); ``inp.psi``, ``inp.seed``
    (``train.seed``); ``orderings.shuffle.by_query``.
    """
    scored = with_positive_psi(triples, doc_scores, inp.psi)
    return query_shuffle(scored, inp.seed) if cfg.by_query else seeded_shuffle(scored, inp.seed)


RECORD = Ordering("shuffle", shuffle, ShuffleConfig)
