"""What the report reads: the evaluate stage's per-query frames of each method (and seed)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from pipeline import io, paths, schemas
from pipeline.report.significance import PerQuery


def read_per_query(path: str | Path) -> pl.DataFrame:
    """A `per_query.parquet` of evaluate@, validated as a keyed table (unique string query_id)."""
    p = Path(path)
    if not p.exists():
        raise io.ArtifactError(f"{p}: file not found. Run `dvc repro` to evaluate the method.")
    schema = schemas.keyed_schema("per-query metrics", pq.read_schema(p).empty_table(), "query_id")
    return io.read_table(p, schema)


def load_per_query(eval_dir: str | Path, method: str, part: str = "") -> PerQuery:
    """One method's per-query metrics: its frame, or `seed → frame` from `seed-<n>/` folders;
    `part` = `transfer`: those of the held-out collection (`…/transfer/per_query.parquet`)."""
    folder = Path(eval_dir) / method
    single = folder / part / paths.PER_QUERY
    if single.exists():
        return read_per_query(single)
    seeds = sorted(folder.glob(f"seed-*/{part + '/' if part else ''}{paths.PER_QUERY}"))
    if not seeds:
        raise io.ArtifactError(
            f"{single}: file not found (nor {folder}/seed-<n>/per_query.parquet). "
            f"Run `dvc repro` so that evaluate@{method} writes it."
        )
    depth = 2 if part else 1  # seed-<n>/[part/]per_query.parquet
    return {int(p.parents[depth - 1].name.removeprefix("seed-")): read_per_query(p)
            for p in seeds}  # fmt: skip


__all__ = ["load_per_query", "read_per_query"]
