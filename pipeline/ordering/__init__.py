"""Training-data orderings: one record per ordering, keyed by the `methods.<m>.ordering` name.

Every public module of this package is one ordering, named after its key, and defines
``RECORD = Ordering(name, fn, Config, needs=…)`` (see :class:`Ordering`); modules whose name
starts with ``_`` and ``common`` are helpers. The registry is collected from those records,
so a new ordering is one file here: its params section is ``orderings.<name>`` (loaded into
its ``Config`` by ``pipeline.params``), its extra inputs are its ``needs``.

An ordering takes the triples, the per-document scores, its config and the method's
:class:`Inputs` and returns the triples in training order with ``position`` (0-based) and
``psi`` (Ψ magnitude of the positive document). This package imports no torch.
"""

from __future__ import annotations

from pipeline.config import collect, lookup
from pipeline.ordering._apply import apply_ordering, as_trained, draw_negatives, psi_profile
from pipeline.ordering._curriculum import bucket_probabilities
from pipeline.ordering.common import DIRECTIONS, Inputs, NoConfig, Ordering

HELPERS = frozenset({"common"})
"""Public modules of this package that are not orderings."""


def _collect() -> dict[str, Ordering]:
    records = collect(__name__, __path__, HELPERS, Ordering, "ordering", same_name=True)
    return {r.name: r for _, r in records}


ORDERINGS: dict[str, Ordering] = _collect()
"""Every ordering's record, by name."""
REGISTRY = ORDERINGS
"""This plug-in package's records (``pipeline.plugins``)."""


def get_ordering(name: str) -> Ordering:
    """The record of ordering ``name``; an unknown name lists the known ones."""
    return lookup(ORDERINGS, name, "ordering")


__all__ = [
    "DIRECTIONS",
    "ORDERINGS",
    "Inputs",
    "NoConfig",
    "Ordering",
    "apply_ordering",
    "as_trained",
    "bucket_probabilities",
    "draw_negatives",
    "get_ordering",
    "psi_profile",
]
