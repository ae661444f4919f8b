"""The plug-in registries, found by name: how modules below the plug-ins read their records.

Each plug-in package collects its own records, one file each (``pipeline.config.collect``),
into a dict ``REGISTRY`` keyed by the name params.yaml uses. This module names the packages
and imports one (by its dotted name) the first time its records are asked for, so that
``pipeline.params`` validates every plug-in's settings against its record without importing
any plug-in package itself: records register upward and the import graph flows one way
(tests/unit/test_import_graph.py). No plug-in package imports torch when collected.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from pipeline.config import lookup

PACKAGES = {
    "loss": "pipeline.train.losses",
    "ordering": "pipeline.ordering",
    "source": "pipeline.data",
    "metric": "pipeline.metrics",
    "model family": "pipeline.models",
    "post": "pipeline.post",
}
"""Plug-in kind → the package whose ``REGISTRY`` holds its records."""
WHAT = {"source": "dataset", "model family": "model.arch"}
"""How an unknown name of a kind is called in errors, where not by the kind itself."""


def records(kind: str) -> Mapping[str, Any]:
    """Every record of plug-in ``kind`` (a key of :data:`PACKAGES`), by name."""
    module = importlib.import_module(PACKAGES[kind])
    registry: Mapping[str, Any] = module.REGISTRY
    return registry


def record(kind: str, name: str) -> Any:
    """The record ``name`` of plug-in ``kind``; an unknown name raises an ``InputError``
    listing the known ones, with a "did you mean"."""
    return lookup(records(kind), name, WHAT.get(kind, kind))
