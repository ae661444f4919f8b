"""Training-data orderings: a registry keyed by the `methods.<m>.ordering` name.

Every ordering takes the triples and the per-document scores and returns the triples in
training order with `position` (0-based) and `psi` (Ψ magnitude of the positive document).
``neutral_only`` and ``biased_only`` drop triples; ``lws`` replaces negatives and needs
``ctx.candidates`` and ``ctx.qrels``; the others keep every triple exactly once.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from pipeline.ordering._curriculum import bucket_probabilities
from pipeline.ordering.biased_only import biased_only
from pipeline.ordering.common import OrderingContext
from pipeline.ordering.curriculum import curriculum
from pipeline.ordering.curriculum_high_low import curriculum_high_low
from pipeline.ordering.curriculum_low_high import curriculum_low_high
from pipeline.ordering.lws import lws
from pipeline.ordering.neutral_only import neutral_only
from pipeline.ordering.shuffle import shuffle

Ordering = Callable[[pl.DataFrame, pl.DataFrame, OrderingContext], pl.DataFrame]

ORDERINGS: dict[str, Ordering] = {
    "shuffle": shuffle,
    "curriculum": curriculum,
    "curriculum_low_high": curriculum_low_high,
    "curriculum_high_low": curriculum_high_low,
    "neutral_only": neutral_only,
    "biased_only": biased_only,
    "lws": lws,
}

FILTERING = frozenset({"neutral_only", "biased_only"})
"""Orderings that keep only some triples."""
NEEDS_CANDIDATES = frozenset({"lws"})
"""Orderings that read ``ctx.candidates`` and ``ctx.qrels``."""

ORDER_GROUPS: dict[str, str] = {
    "shuffle": "plain",
    "neutral_only": "plain",
    "biased_only": "plain",
    "curriculum": "curriculum",
    "curriculum_low_high": "curriculum",
    "curriculum_high_low": "curriculum",
    "lws": "lws",
}
"""Which `order_groups` list (and so which DVC order stage and params) serves an ordering."""


def get_ordering(name: str) -> Ordering:
    if name not in ORDERINGS:
        raise ValueError(f"unknown ordering {name!r}; known: {sorted(ORDERINGS)}")
    return ORDERINGS[name]


__all__ = [
    "FILTERING",
    "NEEDS_CANDIDATES",
    "ORDERINGS",
    "ORDER_GROUPS",
    "Ordering",
    "OrderingContext",
    "bucket_probabilities",
    "get_ordering",
]
