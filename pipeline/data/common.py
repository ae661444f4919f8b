"""The source record and what a source returns (the extract stage's tables, DESIGN §3)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl


@dataclass(frozen=True)
class Extracted:
    """The extract stage's tables (see DESIGN §3)."""

    corpus: pl.DataFrame
    queries: pl.DataFrame
    qrels: pl.DataFrame
    triples: pl.DataFrame
    first_stage: pl.DataFrame | None = None  # shipped candidates (MS MARCO 215 set)
    alignments: pl.DataFrame | None = None  # group alignments (TREC Fair 2022)
    folds: pl.DataFrame | None = None  # query_id, assignment, fold: several fold assignments


@dataclass(frozen=True)
class Source:
    """One data source: everything the params loader and the extract stage need.

    ``name``: the ``dataset.name`` value. ``fn(cfg) -> Extracted``: the four extract tables
    (queries with ``split`` and, for k-fold sources, ``fold``; triples of the training
    queries). ``config``: frozen dataclass of its params section ``dataset.<section>``
    (``section`` = the name with ``-`` as ``_``, a key DVC's ``-S`` can address); a config
    with a ``folds`` field or attribute runs k-fold cross-validation (else one split).
    ``ir_datasets``: the ir_datasets id of its test collection (provenance), if any.
    ``trains``: it has training triples (``dataset.name``); an evaluation-only collection
    (``False``: GenderBias-QA) is a ``transfer.name``. ``saturated``: metric bases this
    collection's construction saturates (``{"AWRF": why}``): shown in the report without †.
    ``submissions(run, folder, temperature)``: files a run of this collection is also written
    as (TREC Fair 2022: the track's submission formats).
    """

    name: str
    fn: Callable[[Any], Extracted]
    config: type
    ir_datasets: str | None = None
    trains: bool = True
    saturated: Mapping[str, str] = field(default_factory=dict)
    submissions: Callable[..., None] | None = None

    @property
    def section(self) -> str:
        """The key of its params section under ``dataset``."""
        return self.name.replace("-", "_")
