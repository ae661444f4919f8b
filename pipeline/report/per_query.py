"""A method's per-query metrics as arrays for the report's tests: one frame or one per seed
(``PerQuery``), the values of a metric as a ``seeds × queries`` matrix, the fold model of
each cell, and two methods' matrices with their seeds paired."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.metrics.variation import COMPLEXITY
from pipeline.retrieval.folds import assignment_of
from pipeline.stats import TTest
from pipeline.stats import paired_ttest as _ttest

log = logging.getLogger(__name__)

PerQuery = pl.DataFrame | Mapping[int, pl.DataFrame]
"""One method's per-query metrics: one frame, or one frame per training seed."""
FOLD = "fold"
"""The column (per-query frames, or the `folds` table) naming the fold model of a query."""
QUERY_ATTRIBUTES = frozenset({COMPLEXITY})
"""Float64 per-query columns that describe the query, not the ranking (the same for every
method): never compared."""


def as_seeds(frames: PerQuery) -> dict[int, pl.DataFrame]:
    """`frames` as `seed → frame` (a single frame is seed 0)."""
    if isinstance(frames, pl.DataFrame):
        return {0: frames}
    if not frames:
        raise InputError("a method has an empty mapping of seeds; expected at least one frame")
    return dict(frames)


def metric_columns(frame: pl.DataFrame) -> list[str]:
    """The Float64 metric columns of a per-query frame (count columns are Int64; query
    attributes such as ``var.complexity`` are not metrics)."""
    return [c for c, t in frame.schema.items() if t == pl.Float64 and c not in QUERY_ATTRIBUTES]


def query_means(frames: PerQuery, metric: str) -> pl.DataFrame:
    """`query_id, <metric>`: each query's mean over seeds (nulls skipped; all null → null)."""
    parts = [
        f.select("query_id", pl.col(metric).cast(pl.Float64))
        for f in as_seeds(frames).values()
        if metric in f.columns
    ]
    if not parts:
        return pl.DataFrame(schema={"query_id": pl.Utf8, metric: pl.Float64})
    both = pl.concat(parts)
    return both.group_by("query_id", maintain_order=True).agg(pl.col(metric).mean())


def seed_aggregates(frames: PerQuery, metric: str) -> list[float]:
    """Per seed, the mean of `metric` over its non-null queries (seeds without any left out)."""
    out = []
    for frame in as_seeds(frames).values():
        if metric in frame.columns and frame[metric].drop_nulls().len():
            out.append(float(frame[metric].drop_nulls().mean()))  # type: ignore[arg-type]
    return out


def paired_values(
    base: pl.DataFrame, other: pl.DataFrame, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """`(base, other)` values of `metric` on the queries non-null and finite in both, aligned."""
    pairs = (
        base.select("query_id", pl.col(metric).alias("_a"))
        .join(other.select("query_id", pl.col(metric).alias("_b")), on="query_id", how="inner")
        .drop_nulls()
        .filter(pl.col("_a").is_finite() & pl.col("_b").is_finite())
        .sort("query_id")
    )
    return pairs["_a"].to_numpy(), pairs["_b"].to_numpy()


def paired_ttest(base: pl.DataFrame, other: pl.DataFrame, metric: str) -> TTest:
    """Paired two-sided t-test of `other − base` over the queries non-null in both."""
    return _ttest(*paired_values(base, other, metric))


def change_pct(value: float | None, base: float | None) -> float | None:
    """`100 · (value − base) / |base|`; null when either is missing or the base is 0."""
    if value is None or base is None or base == 0:
        return None
    return 100.0 * (value - base) / abs(base)


class Aligned:
    """Each frame joined once to a list of query ids, all its columns at a time (the report
    reads every metric of every method: one join per frame instead of one per metric).
    Keyed by the frame's identity, so it keeps the frames it has seen alive."""

    def __init__(self) -> None:
        self._joined: dict[tuple[int, tuple[str, ...]], pl.DataFrame] = {}
        self._frames: list[pl.DataFrame] = []
        self._derived: dict[tuple[str, int], pl.DataFrame] = {}

    def column(self, frame: pl.DataFrame, ids: Sequence[str], name: str) -> pl.Series:
        """``frame[name]`` in the order of ``ids`` (null where a query is missing)."""
        key = (id(frame), tuple(ids))
        if key not in self._joined:
            index = pl.DataFrame({"query_id": list(ids)}, schema={"query_id": pl.Utf8})
            self._joined[key] = index.join(frame, on="query_id", how="left")
            self._frames.append(frame)
        return self._joined[key][name]

    def remember(self, key: tuple[str, int], frame: pl.DataFrame) -> pl.DataFrame:
        """The frame first remembered under ``key`` (a derived frame, built once)."""
        return self._derived.setdefault(key, frame)


def seed_matrix(
    frames: PerQuery, metric: str, query_ids: Sequence[str], cache: Aligned | None = None
) -> np.ndarray:
    """``seeds × queries`` values of ``metric`` in the order of ``query_ids`` (NaN where a
    seed has no value)."""
    cache = cache or Aligned()
    rows = []
    for frame in as_seeds(frames).values():
        if metric not in frame.columns:
            rows.append(np.full(len(query_ids), np.nan))
            continue
        col = cache.column(frame, query_ids, metric).cast(pl.Float64)
        rows.append(col.fill_null(float("nan")).to_numpy())
    return np.vstack(rows)


def fold_matrix(
    frames: PerQuery, query_ids: Sequence[str], folds: pl.DataFrame | None = None,
    cache: Aligned | None = None,
) -> np.ndarray | None:  # fmt: skip
    """``seeds × queries``: the fold whose model scored each query in each seed, from the
    frames' own `fold` column, else from ``folds`` (`query_id, fold[, seed]`: a split per
    seed when it has `seed`); null when neither says (each seed is then one model)."""
    seeds = as_seeds(frames)
    if len(seeds) == 1 and FOLD not in next(iter(seeds.values())).columns:
        return None  # one run: no model component to tell apart, whatever the folds
    cache = cache or Aligned()
    rows = []
    for seed, frame in seeds.items():
        if FOLD in frame.columns:
            source = frame
        elif folds is None:
            return None
        else:
            source = folds.filter(pl.col("seed") == seed) if "seed" in folds.columns else folds
            source = cache.remember(("folds", seed), source)
        col = cache.column(source, query_ids, FOLD).cast(pl.Int64)
        if col.null_count():
            index = pl.Series(list(query_ids), dtype=pl.Utf8)
            missing = index.filter(col.is_null()).head(3).to_list()
            raise InputError(
                f"folds: {col.null_count()} queries have no fold for seed {seed} (e.g. "
                f"{missing}); expected a `fold` for every evaluated query (data/queries.parquet)"
            )
        rows.append(col.to_numpy())
    return np.vstack(rows)


def aligned(
    base: PerQuery, other: PerQuery, metric: str, ids: Sequence[str], folds: pl.DataFrame | None,
    cache: Aligned | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, float]:  # fmt: skip
    """``(other, base, fold, sign)`` matrices, seeds paired: the same seeds on both sides,
    or a one-seed side as a fixed reference (``sign`` −1: the sides were swapped so that
    the one with seeds comes first); other seed sets are cut to the seeds they share."""
    b, o = as_seeds(base), as_seeds(other)
    if len(o) == 1 < len(b):
        swapped_o, swapped_b, fold, _ = aligned(other, base, metric, ids, folds, cache)
        return swapped_o, swapped_b, fold, -1.0
    if len(b) > 1 and set(b) != set(o):
        common = sorted(set(b) & set(o))
        if not common:
            raise InputError(f"{metric}: the seeds {sorted(o)} and {sorted(b)} share none; "
                             "train both with the same train.seeds")  # fmt: skip
        log.warning("%s: seeds %s vs %s: compared on the shared %s", metric, sorted(o),
                    sorted(b), common)  # fmt: skip
        b, o = {s: b[s] for s in common}, {s: o[s] for s in common}
    if len(b) > 1:
        b = {s: b[s] for s in o}
    cache = cache or Aligned()
    return (seed_matrix(o, metric, ids, cache), seed_matrix(b, metric, ids, cache),
            fold_matrix(o, ids, folds, cache), 1.0)  # fmt: skip


def folds_of(queries: pl.DataFrame) -> pl.DataFrame | None:
    """``query_id, fold[, seed]`` of the queries table (null without a `fold` column: one
    train/test split, each seed is then one model)."""
    if FOLD not in queries.columns:
        return None
    keep = [c for c in ("query_id", FOLD, "seed") if c in queries.columns]
    return queries.select(keep).drop_nulls(FOLD)


def seed_folds(assignments: pl.DataFrame, seeds: Sequence[int] | None) -> pl.DataFrame | None:
    """``query_id, fold, seed``: the fold model that scored each query in each run seed, from
    every query's fold in every assignment (``data/folds.parquet``, ``schemas.FOLDS``): the
    i-th of ``seeds`` uses assignment i mod n (``pipeline.retrieval.folds.assignment_of``).
    Without ``seeds``, assignment 0's ``query_id, fold``; null without folds."""
    table = assignments.drop_nulls(FOLD)
    if table.is_empty():
        return None
    if not seeds:
        return table.filter(pl.col("assignment") == 0).select("query_id", FOLD)
    n = table["assignment"].n_unique()
    return pl.concat(
        table.filter(pl.col("assignment") == assignment_of(seeds, s, n))
        .select("query_id", FOLD, pl.lit(s, pl.Int64).alias("seed"))
        for s in seeds
    )
