"""Training-data orderings: a registry keyed by the `methods.<m>.ordering` name.

Every ordering takes the triples and the per-document scores and returns the triples in
training order with `position` (0-based) and `psi` (Ψ magnitude of the positive document).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from pipeline.ordering.common import OrderingContext
from pipeline.ordering.shuffle import shuffle

Ordering = Callable[[pl.DataFrame, pl.DataFrame, OrderingContext], pl.DataFrame]

ORDERINGS: dict[str, Ordering] = {
    "shuffle": shuffle,
}


def get_ordering(name: str) -> Ordering:
    if name not in ORDERINGS:
        raise ValueError(f"unknown ordering {name!r}; known: {sorted(ORDERINGS)}")
    return ORDERINGS[name]


__all__ = ["ORDERINGS", "Ordering", "OrderingContext", "get_ordering"]
