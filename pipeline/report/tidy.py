"""The report's one input table (issue 44): every per-query value of every method, seed and
scope in one long tidy frame, read once per report run; every section takes it, or a view
of it built here by a pure function.

Columns (`TIDY`): ``method``, ``seed`` (null: the method has one run, no ``seed-<n>/``),
``fold`` (the fold model that scored the query when the per-query frame says so, else null:
``pipeline.report.per_query.fold_matrix`` then reads the ``folds`` table), ``query``,
``scope`` (`ALL`: the whole ranked lists; ``judged``, ``transfer``: ``pipeline.report.scopes``,
``pipeline.report.transfer``), ``metric`` (the evaluate stage's column: a metric record's key
such as ``NFaiRR@10``, a count such as ``nfairr_skipped``, or a query attribute such as
``var.complexity``), ``value`` (Float64, null where the metric skips the query) and
``count`` (true for the Int64 count columns, which are summed, never compared).

Rows keep the order of the files and of their columns (seeds in path order), so a view
(`per_query`) is the frame as read: the comparisons and every output are byte-identical to
reading the frames one by one. Which metrics a section shows and in which direction a
metric is better come from the metric records (``pipeline.metrics``; `directions`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from pipeline.metrics import measure_of
from pipeline.paths import PER_QUERY
from pipeline.report.inputs import load_per_query
from pipeline.report.per_query import FOLD, PerQuery, as_seeds

log = logging.getLogger(__name__)

ALL = "all"
"""The scope of the whole ranked lists (``eval/<method>/[seed-<n>/]per_query.parquet``)."""
TIDY = {
    "method": pl.Utf8,
    "seed": pl.Int64,
    "fold": pl.Int64,
    "query": pl.Utf8,
    "scope": pl.Utf8,
    "metric": pl.Utf8,
    "value": pl.Float64,
    "count": pl.Boolean,
}
_ONE_RUN = -1  # the seed key of a method without seed folders while partitioning


def long_table(per_query: Mapping[str, PerQuery], scope: str = ALL) -> pl.DataFrame:
    """``per_query``'s frames (``method → frame | seed → frame``) as rows of `TIDY`."""
    parts = [
        _long(frame, method, seed if isinstance(frames, Mapping) else None, scope)
        for method, frames in per_query.items()
        for seed, frame in as_seeds(frames).items()
    ]
    return pl.concat(parts) if parts else pl.DataFrame(schema=TIDY)


def _long(frame: pl.DataFrame, method: str, seed: int | None, scope: str) -> pl.DataFrame:
    counts = {c for c, t in frame.schema.items() if t.is_integer() and c != FOLD}
    fold = pl.col(FOLD).cast(pl.Int64) if FOLD in frame.columns else pl.lit(None, pl.Int64)
    values = [c for c in frame.columns if c not in ("query_id", FOLD)]
    cast = [pl.col(c).cast(pl.Float64) for c in values]
    rows = frame.select(pl.col("query_id").alias("query"), fold.alias("fold"), *cast).unpivot(
        index=["query", "fold"], on=values, variable_name="metric", value_name="value"
    )
    return rows.select(
        pl.lit(method).alias("method"), pl.lit(seed, pl.Int64).alias("seed"), "fold", "query",
        pl.lit(scope).alias("scope"), "metric", "value",
        pl.col("metric").is_in(list(counts)).alias("count"),
    )  # fmt: skip


def read_table(
    eval_dir: str | Path, methods: Sequence[str], scopes: Sequence[str] = ()
) -> pl.DataFrame:
    """Every method's per-query values (`TIDY`), each file read once: the whole lists (a
    missing file raises, naming the stage to run) and each of ``scopes`` (``judged``,
    ``transfer``: ``eval/<method>/[seed-<n>/]<scope>/``) where the method was evaluated in it."""
    parts = [long_table({m: load_per_query(eval_dir, m) for m in methods})]
    for scope in scopes:
        pattern = f"**/{scope}/{PER_QUERY}"
        have = [m for m in methods if next((Path(eval_dir) / m).glob(pattern), None)]
        parts.append(long_table({m: load_per_query(eval_dir, m, scope) for m in have}, scope))
    table = pl.concat(parts)
    log.info("report table: %d values of %d methods, scopes %s", table.height, len(methods),
             table["scope"].unique(maintain_order=True).to_list())  # fmt: skip
    return table


Views = Mapping[str, Mapping[str, PerQuery]]
"""The table as the comparisons read it: ``scope → method → frame | seed → frame``."""


def views(table: pl.DataFrame) -> dict[str, dict[str, PerQuery]]:
    """Every scope's per-query frames as the evaluate stage wrote them (``query_id``,
    [``fold``,] one column per metric, in the order read; one frame, or ``seed → frame`` for
    a method with seed folders): one pivot per scope."""
    return {str(s): _scope(table.filter(pl.col("scope") == s))
            for s in table["scope"].unique(maintain_order=True)}  # fmt: skip


def _scope(rows: pl.DataFrame) -> dict[str, PerQuery]:
    rows = rows.with_columns(pl.col("seed").fill_null(_ONE_RUN))
    runs = rows.group_by("method", "seed", maintain_order=True).agg(
        pl.col("metric").unique(maintain_order=True).alias("metrics"),
        pl.col("metric").filter("count").unique().alias("counts"),
        pl.col("fold").is_not_null().any().alias("has_fold"),
    )
    wide = rows.pivot(
        on="metric", index=["method", "seed", "query", "fold"], values="value", sort_columns=False
    ).partition_by("method", "seed", as_dict=True, maintain_order=True)
    out: dict[str, dict[int, pl.DataFrame]] = {}
    for method, seed, metrics, counts, has_fold in runs.iter_rows():
        frame = wide[(method, seed)].select(
            pl.col("query").alias("query_id"), *([FOLD] if has_fold else []), *metrics
        )
        out.setdefault(method, {})[seed] = frame.with_columns(pl.col(counts).cast(pl.Int64))
    return {m: seeds.get(_ONE_RUN, seeds) for m, seeds in out.items()}


def pick(scope: Mapping[str, PerQuery], methods: Sequence[str]) -> dict[str, PerQuery] | None:
    """``methods``' frames of one scope's views, in that order; null when one has none."""
    if any(m not in scope for m in methods):
        return None
    return {m: scope[m] for m in methods}


def per_query(
    table: pl.DataFrame, methods: Sequence[str], scope: str = ALL
) -> dict[str, PerQuery] | None:
    """The per-query frames of ``methods`` in ``scope`` (`views`); null when a method has no
    values in it."""
    return pick(_scope(table.filter(pl.col("scope") == scope)), methods)


def directions(table: pl.DataFrame) -> pl.DataFrame:
    """``metric, direction, lo, hi`` of the table's metrics that a metric record declares
    (``↑``, ``↓`` or ``→x``, and the range), in the table's order."""
    keys = table.filter(~pl.col("count"))["metric"].unique(maintain_order=True).to_list()
    rows = [(k, m.direction, m.lo, m.hi) for k in keys if (m := measure_of(k)) is not None]
    return pl.DataFrame(rows, schema=["metric", "direction", "lo", "hi"], orient="row")


__all__ = [
    "ALL", "TIDY", "Views", "directions", "long_table", "per_query", "pick", "read_table", "views"
]  # fmt: skip
