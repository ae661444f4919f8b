"""`size_matched`: a random subset of the triples as large as a filter's (issue 21 control).

The filters (`neutral_only`, `biased_only`) change *which* triples a model trains on and
*how many* (on Grep-BiasIR about 40% / 60% of them), so a difference from the baseline
mixes the two. This ordering keeps as many triples as the filter named by `match` would,
chosen at random regardless of Ψ, and shuffles them as `shuffle` does: the filter minus its
size-matched control is the effect of the selection alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from pipeline.config import Checked
from pipeline.ordering.common import Inputs, Ordering, rng, shuffled, with_positive_psi

KEEP = {"neutral_only": pl.col("psi") == 0.0, "biased_only": pl.col("psi") > 0.0}


@dataclass(frozen=True)
class SizeMatchedConfig(Checked):
    """``match``: the filter whose kept count is matched; ``by_query``: as ``shuffle``."""

    match: Literal["neutral_only", "biased_only"] = "neutral_only"
    by_query: bool = True


def size_matched(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, cfg: SizeMatchedConfig, inp: Inputs
) -> pl.DataFrame:
    """As many triples as ``cfg.match`` keeps (Ψ⁺ of ``inp.psi``), drawn as whole training
    units: the (query, positive) keys in a seeded random order, each with all its triples,
    until the filter's count is reached (a filter keeps or drops a positive's triples
    together, so the number of training groups matches too); then shuffled as ``shuffle``.

    Paper: the data-size control of the curriculum paper's filters (issue 21).
    Inputs: triples, ``doc_scores``; ``inp.psi``, ``inp.seed``; ``match``, ``by_query``.
    """
    scored = with_positive_psi(triples, doc_scores, inp.psi)
    target = scored.filter(KEEP[cfg.match]).height
    keys = scored.group_by("query_id", "pos_doc_id", maintain_order=True).len()
    keys = keys.sort("query_id", "pos_doc_id")[rng(inp.seed, 11).permutation(keys.height)]
    counts = keys["len"].to_numpy()
    take = int(np.searchsorted(np.cumsum(counts), target, side="right"))
    chosen = keys.head(take).select("query_id", "pos_doc_id")
    kept = scored.join(chosen, on=["query_id", "pos_doc_id"], how="semi", maintain_order="left")
    return shuffled(kept, inp.seed, cfg.by_query)


RECORD = Ordering("size_matched", size_matched, SizeMatchedConfig, filters=True)
