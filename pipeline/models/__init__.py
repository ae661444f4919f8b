"""Model families (SPEC §5.1): ``cross_encoder``, ``bi_encoder``, ``late_interaction``.

One file per family, named after its ``model.arch`` key, defining ``RECORD = Family(...)``
(``pipeline.models.family``) with its own settings (``model.<arch>``) and its ranker class.
The records are collected here without importing torch (a family builds its class on first
use), so params validate ``model.<arch>`` cheaply; building and loading rankers
(``build_ranker``, ``load_ranker``) is ``pipeline.models.registry``.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.config import collect, lookup
from pipeline.models.family import Family

HELPERS = frozenset({"base", "card", "encoders", "family", "features", "registry", "storage"})
"""Public modules of this package that are not model families."""


def _collect() -> dict[str, Family]:
    folder = [str(Path(__file__).parent)]
    records = collect(__name__, folder, HELPERS, Family, "model family", same_name=True)
    return {r.name: r for _, r in records}


MODELS: dict[str, Family] = _collect()
"""Every model family's record, by ``model.arch``."""
REGISTRY = MODELS
"""This plug-in package's records (``pipeline.plugins``)."""


def family_names() -> list[str]:
    """Every model family (``model.arch`` value), sorted."""
    return sorted(MODELS)


def get_family(arch: str) -> Family:
    """The record of family ``arch``; an unknown name lists the known ones."""
    return lookup(MODELS, arch, "model.arch")


__all__ = ["MODELS", "Family", "family_names", "get_family"]
