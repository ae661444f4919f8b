"""The source record and what a source returns (the extract stage's tables, DESIGN §3)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from pipeline.errors import InputError

USABLE = r"[^\W_]"
"""A usable word has at least one letter or digit (any script): a text without one (empty,
blank, punctuation or emoji only) gives BM25 and the rankers nothing to match."""
SHOWN = 5
"""How many offending ids an error names (then the count)."""


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


def ids_line(ids: list[str], shown: int = SHOWN) -> str:
    """``'a', 'b', … (+3 more)``: the first ``shown`` of ``ids`` and how many more."""
    more = f" (+{len(ids) - shown} more)" if len(ids) > shown else ""
    return ", ".join(repr(i) for i in ids[:shown]) + more


def check_texts(table: pl.DataFrame, id_column: str, what: str, where: str) -> None:
    """Refuse ``table`` (``id_column``, ``text``) when a row has no usable word (``USABLE``):
    an empty or emoji-only query would match no document, be filled with its own judged
    documents and score MRR = nDCG = 1.0 (issue 43). ``what``: ``queries`` or ``documents``;
    ``where``: the file or collection they were read from."""
    text = pl.col("text").fill_null("")
    bad = table.filter(~text.str.contains(USABLE))[id_column].cast(pl.Utf8).to_list()
    if bad:
        raise InputError(
            f"{where}: {len(bad)} {what} have no usable text (no letter or digit): "
            f"{id_column} {ids_line(bad)}; give each a text with at least one word, or "
            "remove them (with their qrels)"
        )


def check_extracted(out: Extracted, where: str) -> None:
    """``check_texts`` over a source's queries and corpus (every source, read from files or
    ir_datasets: ``where`` names the source and its collection)."""
    check_texts(out.queries, "query_id", "queries", where)
    check_texts(out.corpus, "doc_id", "documents", where)
