"""Data sources: one record per source, keyed by the ``dataset.name`` value.

A public module of this package that defines ``RECORD = Source(name, fn, Config)`` is a source
(:class:`~pipeline.data.common.Source`); the others (``common``, ``irds``,
``trec_fair_articles``, ``trec_fair_submission``) are helpers. An evaluation-only collection
(``genderbias_qa``, the held-out transfer collection) is a source too, with ``trains=False``.
The registry is collected from those records, so a new source is one file: its params section is
``dataset.<section>`` (its name with ``-`` as ``_``), loaded into its ``Config`` by
``pipeline.params``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl

from pipeline.config import collect, lookup
from pipeline.data.common import Extracted, Source, check_extracted

HELPERS = frozenset({"common", "irds", "trec_fair_articles", "trec_fair_submission"})
"""Public modules of this package that are not sources."""


SOURCES: dict[str, Source] = {
    r.name: r for _, r in collect(__name__, __path__, HELPERS, Source, "data source")
}
"""Every data source's record, by ``dataset.name``."""
REGISTRY = SOURCES
"""This plug-in package's records (``pipeline.plugins``)."""


def get_source(name: str) -> Source:
    """The record of source ``name``; an unknown name lists the known ones."""
    return lookup(SOURCES, name, "dataset")


def extract(name: str, cfg: Any) -> Extracted:
    """Source ``name``'s tables with its config; sources without folds get one (``fold`` 0 =
    the test queries, and every triple trains fold 0's model)."""
    source = get_source(name)
    out = source.fn(cfg)
    collection = f" ({source.ir_datasets})" if source.ir_datasets else ""
    check_extracted(out, f"source {name!r}{collection}")  # no query or document without text
    if "fold" in out.queries.columns:
        return out
    test = pl.col("split") == "test"
    queries = out.queries.with_columns(pl.when(test).then(0).otherwise(None).alias("fold"))
    triples = out.triples.with_columns(pl.lit(0, dtype=pl.Int64).alias("fold"))
    return replace(out, queries=queries.cast({"fold": pl.Int64}), triples=triples)


__all__ = ["SOURCES", "Extracted", "Source", "extract", "get_source"]
