"""What every metric family receives: the validated tables of one evaluation.

`EvalInputs` normalises its tables on construction (required columns selected, ids cast to
strings, numbers to Int64/Float64) and rejects a malformed run with a `ValueError` naming the
problem, the first offending query/document and the fix. Per-query metric tables share two
conventions that `pipeline.metrics.suite` relies on:

- a Float64 column is a metric value (null where the query is skipped for that metric);
- an Int64 column is a per-query count (documents or a 0/1 query flag) that the suite sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Literal

import polars as pl

AwrfTarget = Literal["uniform", "relevant"]
MetricFn = Callable[["EvalInputs", tuple[int, ...]], pl.DataFrame]
Columns = dict[str, type[pl.DataType]]

RUN_COLUMNS: Columns = {
    "query_id": pl.String,
    "doc_id": pl.String,
    "score": pl.Float64,
    "rank": pl.Int64,
}
QRELS_COLUMNS: Columns = {"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}
CANDIDATE_COLUMNS: Columns = {"query_id": pl.String, "doc_id": pl.String, "rank": pl.Int64}
DOC_GROUP_COLUMNS: Columns = {"doc_id": pl.String, "group": pl.String}
DOC_SCORE_COLUMNS: Columns = {"doc_id": pl.String} | {
    c: pl.Float64
    for c in (
        *(f"{x}_{g}" for x in ("tc", "tf", "bool") for g in ("f", "m")),
        "neutrality",
        "lex_f",
        "lex_m",
    )
}

_FIX = {
    "non-finite": "drop or re-score these rows (the reranker emitted NaN/inf) before evaluating",
    "duplicate": "keep one row per (query_id, doc_id), e.g. `df.unique(subset=[...])`",
    "rank": "recompute ranks as 1..n per query (rank 1 = best) before evaluating",
    "null": "fill or drop the null values before evaluating",
}


class MissingInputError(ValueError):
    """A metric family needs an optional input (qrels, doc_scores, ...) that is None."""


@dataclass(frozen=True)
class EvalInputs:
    """Tables of one evaluation; optional ones left None disable the families that need them.

    `awrf_target` selects the AWRF target distribution ("uniform" or "relevant", SPEC §4.6).
    """

    run: pl.DataFrame
    qrels: pl.DataFrame | None = None
    doc_scores: pl.DataFrame | None = None
    candidates: pl.DataFrame | None = None
    doc_groups: pl.DataFrame | None = None
    awrf_target: AwrfTarget = "uniform"

    def __post_init__(self) -> None:
        if self.awrf_target not in ("uniform", "relevant"):
            raise ValueError(
                f"awrf_target must be 'uniform' or 'relevant', got {self.awrf_target!r}"
            )
        specs: dict[str, tuple[Columns, tuple[str, ...]]] = {
            "run": (RUN_COLUMNS, ("query_id", "doc_id")),
            "qrels": (QRELS_COLUMNS, ("query_id", "doc_id")),
            "doc_scores": (DOC_SCORE_COLUMNS, ("doc_id",)),
            "candidates": (CANDIDATE_COLUMNS, ("query_id", "doc_id")),
            "doc_groups": (DOC_GROUP_COLUMNS, ("doc_id",)),
        }
        for f in fields(self):
            df = getattr(self, f.name)
            if f.name in specs and df is not None:
                columns, key = specs[f.name]
                object.__setattr__(self, f.name, normalise(df, f.name, columns, key))
        _check_ranks(self.run, "run")
        if self.candidates is not None:
            _check_ranks(self.candidates, "candidates")


def normalise(df: pl.DataFrame, name: str, columns: Columns, key: Sequence[str]) -> pl.DataFrame:
    """Select and cast `columns`; reject missing columns, nulls, non-finite floats, duplicates."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(
            f"{name}: missing columns {missing}; expected {list(columns)}, got {df.columns}"
        )
    out = df.select(pl.col(c).cast(t) for c, t in columns.items())
    for c in columns:
        _first_bad(out, pl.col(c).is_null(), name, f"null {c!r}", "null")
    floats = [c for c, t in columns.items() if t == pl.Float64]
    if floats:
        bad = pl.any_horizontal(~pl.col(c).is_finite() for c in floats)
        _first_bad(out, bad, name, "non-finite (NaN/inf) value", "non-finite")
    dup = pl.struct(list(key)).is_duplicated()
    _first_bad(out, dup, name, f"duplicate {tuple(key)} rows", "duplicate")
    return out


def _first_bad(df: pl.DataFrame, bad: pl.Expr, name: str, what: str, fix: str) -> None:
    rows = df.filter(bad)
    if rows.height:
        first = {c: rows[c][0] for c in ("query_id", "doc_id") if c in rows.columns}
        raise ValueError(
            f"{name}: {rows.height} rows with {what}; first at {first}. Fix: {_FIX[fix]}."
        )


def _check_ranks(df: pl.DataFrame, name: str) -> None:
    """Each query's ranks must be exactly 1..n (what every rank-based metric reads)."""
    if df.height == 0:
        raise ValueError(f"{name}: the table is empty; expected at least one ranked document")
    per_query = df.group_by("query_id", maintain_order=True).agg(
        pl.len().alias("n"),
        pl.col("rank").min().alias("lo"),
        pl.col("rank").max().alias("hi"),
        pl.col("rank").n_unique().alias("distinct"),
    )
    bad = per_query.filter(
        (pl.col("lo") != 1) | (pl.col("hi") != pl.col("n")) | (pl.col("distinct") != pl.col("n"))
    ).sort("query_id")
    if bad.height:
        q = bad.row(0, named=True)
        raise ValueError(
            f"{name}: {bad.height} queries whose ranks are not 1..n; first query "
            f"{q['query_id']!r} has {q['n']} rows with ranks {q['lo']}..{q['hi']} "
            f"({q['distinct']} distinct). Fix: {_FIX['rank']}."
        )


def require(ctx: EvalInputs, name: str, family: str) -> pl.DataFrame:
    """Return the optional input `name` of `ctx`, or raise MissingInputError."""
    df = getattr(ctx, name)
    if df is None:
        raise MissingInputError(f"metric family {family!r} needs {name!r}, which is None")
    assert isinstance(df, pl.DataFrame)
    return df


def query_frame(run: pl.DataFrame) -> pl.DataFrame:
    """One row per run query, sorted: the row set of every per-query table."""
    return run.select("query_id").unique().sort("query_id")


def top_k(run: pl.DataFrame, k: int) -> pl.DataFrame:
    """Rows ranked 1..min(k, len) of each query (ranks are validated to be 1..n)."""
    return run.filter(pl.col("rank") <= k)


def check_cutoffs(cutoffs: Sequence[int]) -> tuple[int, ...]:
    """Reject empty or non-positive cut-offs; return them as a sorted, deduplicated tuple."""
    out = tuple(sorted(set(cutoffs)))
    if not out or any(not isinstance(k, int) or k < 1 for k in out):
        raise ValueError(f"cutoffs must be positive integers, got {tuple(cutoffs)}")
    return out


def finish(base: pl.DataFrame, values: pl.DataFrame, counts: Sequence[str]) -> pl.DataFrame:
    """Left-join `values` onto all run queries; counts of absent queries become 0."""
    out = base.join(values, on="query_id", how="left", maintain_order="left")
    return out.with_columns(pl.col(c).fill_null(0).cast(pl.Int64) for c in counts)
