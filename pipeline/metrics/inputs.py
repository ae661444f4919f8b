"""What every metric family receives: the validated tables of one evaluation.

`EvalInputs` normalises its tables on construction (required columns selected and cast to
their types in `pipeline.schemas`) and rejects a malformed run with a `ValueError` naming the
problem, the first offending query/document and the fix. Per-query metric tables share two
conventions that `pipeline.metrics.suite` relies on:

- a Float64 column is a metric value (null where the query is skipped for that metric);
- an Int64 column is a per-query count (documents or a 0/1 query flag) that the suite sums.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Literal

import polars as pl
import pyarrow as pa

from pipeline import schemas
from pipeline.errors import InputError

log = logging.getLogger(__name__)

AwrfTarget = Literal["uniform", "relevant"]
MetricFn = Callable[..., pl.DataFrame]
"""``fn(ctx, cutoffs)`` or, for a family with settings, ``fn(ctx, cutoffs, cfg)``."""
Summary = Callable[[pl.DataFrame], dict[str, float]]
Columns = dict[str, pl.DataType]


def _columns(schema: schemas.Schema, *names: str) -> Columns:
    """``names`` with the polars types of their Arrow types in ``schema`` (``pipeline.schemas``,
    the one place column specs live)."""
    arrow = schema.columns()
    empty = pl.from_arrow(pa.schema([(n, arrow[n]) for n in names]).empty_table())
    assert isinstance(empty, pl.DataFrame)
    return dict(empty.schema)


RUN_COLUMNS = _columns(schemas.RUN, "query_id", "doc_id", "score", "rank")
QRELS_COLUMNS = _columns(schemas.QRELS, "query_id", "doc_id", "relevance")
CANDIDATE_COLUMNS = _columns(schemas.CANDIDATES, "query_id", "doc_id", "rank")
DOC_GROUP_COLUMNS = _columns(schemas.CORPUS, "doc_id", "group")
ALIGNMENT_COLUMNS = _columns(schemas.ALIGNMENTS, "doc_id", "group", "weight")
COMPLEXITY_COLUMNS = _columns(schemas.QUERY_COMPLEXITY, "query_id", "complexity", "bin")
DOC_SCORE_COLUMNS = _columns(
    schemas.DOC_SCORES,
    "doc_id",
    *(f"{x}_{g}" for x in ("tc", "tf", "bool") for g in ("f", "m")),
    "neutrality",
    "lex_f",
    "lex_m",
)

_FIX = {
    "non-finite": "drop or re-score these rows (the reranker emitted NaN/inf) before evaluating",
    "duplicate": "keep one row per (query_id, doc_id), e.g. `df.unique(subset=[...])`",
    "rank": "recompute ranks as 1..n per query (rank 1 = best) before evaluating",
    "null": "fill or drop the null values before evaluating",
}




class MissingInputError(InputError):
    """A metric family needs an optional input (qrels, doc_scores, ...) that is None."""


@dataclass(frozen=True)
class EvalInputs:
    """Tables of one evaluation; optional ones left None disable the families that need them.

    `alignments` (`doc_id, group, weight`: each document's distribution over groups, e.g.
    `intersect` of TREC Fair 2022's dimensions) are the groups of AWRF and expected exposure;
    without them those read `doc_groups` as one-hot alignments. `dimensions`: the
    alignments per fairness dimension before their intersection (`doc_id, dimension, group,
    weight`; TREC Fair 2022), what the track's own variant of AWRF and expected exposure reads.
    A family's own settings are not here: each takes its config (`evaluate.<family>`).
    """

    run: pl.DataFrame
    qrels: pl.DataFrame | None = None
    doc_scores: pl.DataFrame | None = None
    candidates: pl.DataFrame | None = None
    doc_groups: pl.DataFrame | None = None
    query_complexity: pl.DataFrame | None = None  # data/query_complexity.parquet (SPEC §3)
    alignments: pl.DataFrame | None = None
    dimensions: pl.DataFrame | None = None

    def __post_init__(self) -> None:
        specs: dict[str, tuple[Columns, tuple[str, ...]]] = {
            "run": (RUN_COLUMNS, ("query_id", "doc_id")),
            "qrels": (QRELS_COLUMNS, ("query_id", "doc_id")),
            "doc_scores": (DOC_SCORE_COLUMNS, ("doc_id",)),
            "candidates": (CANDIDATE_COLUMNS, ("query_id", "doc_id")),
            "doc_groups": (DOC_GROUP_COLUMNS, ("doc_id",)),
            "query_complexity": (COMPLEXITY_COLUMNS, ("query_id",)),
            "alignments": (ALIGNMENT_COLUMNS, ("doc_id", "group")),
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
        raise InputError(
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
        raise InputError(
            f"{name}: {rows.height} rows with {what}; first at {first}. Fix: {_FIX[fix]}."
        )


def _check_ranks(df: pl.DataFrame, name: str) -> None:
    """Each query's ranks must be exactly 1..n (what every rank-based metric reads)."""
    if df.height == 0:
        raise InputError(f"{name}: the table is empty; expected at least one ranked document")
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
        raise InputError(
            f"{name}: {bad.height} queries whose ranks are not 1..n; first query "
            f"{q['query_id']!r} has {q['n']} rows with ranks {q['lo']}..{q['hi']} "
            f"({q['distinct']} distinct). Fix: {_FIX['rank']}."
        )


def intersect(alignments: pl.DataFrame, dimensions: Sequence[str] | None = None) -> pl.DataFrame:
    """Outer product of per-dimension alignments `doc_id, dimension, group, weight` →
    `doc_id, group, weight`; a document lacking one of the dimensions is dropped (logged)."""
    dims = list(dimensions) if dimensions else sorted(alignments["dimension"].unique().to_list())
    out: pl.DataFrame | None = None
    for dim in dims:
        part = alignments.filter(pl.col("dimension") == dim).select(
            "doc_id", (pl.lit(f"{dim}=") + pl.col("group")).alias("group"), "weight"
        )
        if out is None:
            out = part
            continue
        out = out.join(part, on="doc_id", suffix="_r").select(
            "doc_id",
            (pl.col("group") + "|" + pl.col("group_r")).alias("group"),
            pl.col("weight") * pl.col("weight_r"),
        )
    if out is None:
        raise InputError(
            f"intersect: no dimension given or found; got columns {alignments.columns}"
        )
    dropped = alignments["doc_id"].n_unique() - out["doc_id"].n_unique()
    if dropped:
        log.warning("intersect: %d documents lack one of the dimensions %s; dropped", dropped, dims)
    return out.sort("doc_id", "group")


def one_hot(doc_groups: pl.DataFrame) -> pl.DataFrame:
    """`doc_id, group` labels as alignments `doc_id, group, weight = 1`."""
    return doc_groups.select("doc_id", "group", pl.lit(1.0).alias("weight"))


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
        raise InputError(f"cutoffs must be positive integers, got {tuple(cutoffs)}")
    return out


def finish(base: pl.DataFrame, values: pl.DataFrame, counts: Sequence[str]) -> pl.DataFrame:
    """Left-join `values` onto all run queries; counts of absent queries become 0."""
    out = base.join(values, on="query_id", how="left", maintain_order="left")
    return out.with_columns(pl.col(c).fill_null(0).cast(pl.Int64) for c in counts)
