"""Shared pieces of the orderings: the record, what an ordering receives, Ψ lookup, positions."""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from pipeline.config import Checked, NoConfig
from pipeline.errors import InputError
from pipeline.schemas import PSI_SOURCE, Direction

DIRECTIONS: tuple[str, ...] = typing.get_args(Direction)

Seed = int | tuple[int, ...]
"""An RNG seed: ``train.seed`` (or an ordering's own ``seed``), or ``(seed, fold)`` per fold."""


@dataclass(frozen=True)
class Inputs:
    """What the order stage hands an ordering besides its ``Config``.

    ``psi``: the method's Ψ column (``methods.<m>.psi``); ``seed``: ``train.seed``, or
    ``(train.seed, fold)`` when the triples are split by fold; ``direction``: the method's
    ``direction`` (only for orderings whose record lists it in ``method_keys``); ``tables``:
    the extra input tables the record ``needs``, by name (one fold's rows of each);
    ``method``: every per-method key the record declares that the method sets
    (``methods.<m>.<key>``; ``inp.method.get("window", 8)``).
    """

    psi: str = "bool_abs"
    seed: Seed = 0
    direction: str | None = None
    tables: Mapping[str, pl.DataFrame] = field(default_factory=dict, repr=False, compare=False)
    method: Mapping[str, Any] = field(default_factory=dict)

    def table(self, name: str, columns: Sequence[str], ordering: str) -> pl.DataFrame:
        """The input table ``name``; a clear error if it is absent or lacks ``columns``."""
        if name not in self.tables:
            raise InputError(
                f"ordering {ordering!r} needs the {name!r} table (columns {list(columns)}); "
                f"list it in the record's `needs` so the order stage reads it"
            )
        frame = self.tables[name]
        missing = sorted(set(columns) - set(frame.columns))
        if missing:
            raise InputError(f"table {name!r} lacks columns {missing}; has {frame.columns}")
        return frame

    def rng_seed(self, own: int | None = None) -> Seed:
        """The seed to draw with: ``own`` (an ordering's own ``seed`` param) in place of
        ``train.seed`` when set, still mixed with the fold."""
        if own is None:
            return self.seed
        return own if isinstance(self.seed, int) else (own, *self.seed[1:])


OrderFn = Callable[[pl.DataFrame, pl.DataFrame, Any, Inputs], pl.DataFrame]
"""``fn(triples, doc_scores, cfg, inputs)`` → the triples in training order with
``position`` (0, 1, …) and ``psi`` (|Ψ| of the positive)."""


@dataclass(frozen=True)
class Ordering:
    """One ordering plug-in: everything the params loader, DVC and the order stage need.

    ``name``: the ``methods.<m>.ordering`` value, also the module's file name.
    ``fn``: the ordering (see ``OrderFn``). ``config``: frozen dataclass of its
    ``orderings.<name>`` section (``NoConfig`` for ``{}``); fields carry ``Literal`` choices
    and ``Annotated[..., Range(...)]`` bounds. ``needs``: extra input tables by name
    (``train_candidates``, ``qrels``), read by the order stage only when named here.
    ``method_keys``: per-method settings it reads from the method entry
    (``methods.<m>.direction``), handed to it in ``Inputs.method``; ``method_config``: a
    frozen dataclass typing them (each field optional, ``None``: not set), or ``None``
    (values taken as written).
    ``filters``: it keeps only some triples. ``replaces_negatives``: it may swap negatives.
    """

    name: str
    fn: OrderFn
    config: type = NoConfig
    needs: tuple[str, ...] = ()
    method_keys: tuple[str, ...] = ()
    method_config: type | None = None
    filters: bool = False
    replaces_negatives: bool = False


def rng(seed: Seed, *stream: int) -> np.random.Generator:
    """A generator for ``seed``; ``stream`` numbers give independent streams of one seed."""
    if not stream and isinstance(seed, int):
        return np.random.default_rng(seed)
    base = (seed,) if isinstance(seed, int) else seed
    return np.random.default_rng([*base, *stream])


def with_positive_psi(triples: pl.DataFrame, doc_scores: pl.DataFrame, psi: str) -> pl.DataFrame:
    """Attach `psi` = |Ψ| of each triple's positive document (0 for unscored documents)."""
    col = PSI_SOURCE[psi]
    scores = doc_scores.select(
        pl.col("doc_id").alias("pos_doc_id"), pl.col(col).abs().cast(pl.Float64).alias("psi")
    )
    out = triples.join(scores, on="pos_doc_id", how="left", maintain_order="left")
    return out.with_columns(pl.col("psi").fill_null(0.0))


def numbered(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with ``position`` = 0, 1, … in its row order (Int64)."""
    return frame.with_columns(pl.int_range(0, pl.len(), dtype=pl.Int64).alias("position"))


def seeded_shuffle(frame: pl.DataFrame, seed: Seed) -> pl.DataFrame:
    """Rows of ``frame`` in a uniformly random order drawn with ``seed``, numbered."""
    perm = rng(seed).permutation(frame.height)
    return numbered(frame[perm])


@dataclass(frozen=True)
class ShuffleConfig(Checked):
    """``orderings.<name>`` of an ordering whose result is shuffled (``shuffle``, the
    filters, ``lws``): ``by_query`` shuffles queries and keeps each query's triples together
    (in a random order), so a training batch holds one query's counterfactual versions and
    shares their texts; ``false`` shuffles the triples themselves."""

    by_query: bool = True


def shuffled(frame: pl.DataFrame, seed: Seed, by_query: bool) -> pl.DataFrame:
    """:func:`query_shuffle` with ``by_query``, else :func:`seeded_shuffle`."""
    return query_shuffle(frame, seed) if by_query else seeded_shuffle(frame, seed)


def query_shuffle(frame: pl.DataFrame, seed: Seed) -> pl.DataFrame:
    """Queries in a uniformly random order, each query's rows contiguous and themselves in a
    random order (one seeded permutation of rows, then a stable sort by a random query rank):
    training batches then hold one query's triples, whose texts are encoded once."""
    gen = rng(seed)
    rows = frame[gen.permutation(frame.height)]
    queries = rows["query_id"].unique(maintain_order=True)
    rank = dict(zip(queries.to_list(), gen.permutation(queries.len()).tolist(), strict=True))
    key = pl.col("query_id").replace_strict(rank, return_dtype=pl.Int64)
    return numbered(rows.with_columns(key.alias("_q")).sort("_q", maintain_order=True).drop("_q"))


def filtered_by_psi(
    triples: pl.DataFrame,
    doc_scores: pl.DataFrame,
    inp: Inputs,
    keep: pl.Expr,
    name: str,
    by_query: bool = False,
) -> pl.DataFrame:
    """Triples whose positive satisfies ``keep`` (an expression on ``psi``), shuffled as the
    ``shuffle`` ordering does (``by_query``: queries shuffled, a query's triples together).

    No triple left raises ``ValueError`` naming the ordering and the Ψ column.
    """
    scored = with_positive_psi(triples, doc_scores, inp.psi)
    kept = scored.filter(keep)
    if kept.height == 0:
        raise InputError(
            f"ordering {name!r} keeps none of the {triples.height} triples (psi={inp.psi!r}, "
            f"{PSI_SOURCE[inp.psi]}); choose another psi column or ordering"
        )
    return shuffled(kept, inp.seed, by_query)
