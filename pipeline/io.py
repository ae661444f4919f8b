"""All file I/O of the pipeline: atomic writes, validated reads.

Every write goes to a temporary file in the destination folder and is renamed into place, so
a crash mid-write leaves either the old artifact or none, never a truncated one. Every read
validates against `pipeline.schemas` and names the file in any error.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import InputError
from pipeline.schemas import RUN, Schema, SchemaError, validate


class ArtifactError(InputError):
    """An input file is missing, unreadable or malformed."""


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it onto `path` only on success."""
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix + ".tmp", dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, dest)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(text: str, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(obj: Any, path: str | Path) -> None:
    """Write JSON atomically; NaN/inf are rejected (JSON has no such numbers)."""
    _check_finite(obj, str(path))
    write_text(json.dumps(obj, indent=2, sort_keys=False) + "\n", path)


def _check_finite(obj: Any, where: str) -> None:
    if isinstance(obj, float) and not math.isfinite(obj):
        raise InputError(f"{where}: refusing to write a non-finite number ({obj})")
    if isinstance(obj, dict):
        for k, v in obj.items():
            _check_finite(v, f"{where}:{k}")
    elif isinstance(obj, list | tuple):
        for v in obj:
            _check_finite(v, where)


def read_json(path: str | Path) -> Any:
    p = _existing(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ArtifactError(f"{p}: malformed JSON ({e}); regenerate it with `dvc repro`") from e


def _existing(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise ArtifactError(
            f"{p}: file not found. Run the stage that produces it (`dvc repro`) "
            "or fix the path in params.yaml."
        )
    return p


def write_table(df: pl.DataFrame | pa.Table, path: str | Path, schema: Schema) -> None:
    """Validate against `schema` and write Parquet atomically."""
    table = df.to_arrow() if isinstance(df, pl.DataFrame) else df
    table = validate(table, schema, str(path))
    with atomic_path(path, ".parquet") as tmp:
        pq.write_table(table, tmp, compression="zstd")


def parquet_columns(path: str | Path) -> list[str]:
    """Column names of a Parquet artifact, from its footer alone (nothing else is read)."""
    p = _existing(path)
    try:
        return list(pq.read_schema(p).names)
    except (pa.ArrowInvalid, OSError) as e:
        raise ArtifactError(
            f"{p}: not a readable Parquet file ({e}); it may be truncated. "
            "Delete it and rerun `dvc repro`."
        ) from e


def read_table(path: str | Path, schema: Schema) -> pl.DataFrame:
    """Read a Parquet artifact, validate it, and return a polars frame."""
    p = _existing(path)
    try:
        table = pq.read_table(p)
    except (pa.ArrowInvalid, OSError) as e:
        raise ArtifactError(
            f"{p}: not a readable Parquet file ({e}); it may be truncated. "
            "Delete it and rerun `dvc repro`."
        ) from e
    out = pl.from_arrow(validate(table, schema, str(p)))
    assert isinstance(out, pl.DataFrame)
    return out


def write_trec_run(
    run: pl.DataFrame, path: str | Path, tag: str, metadata: Mapping[str, Any] | None = None
) -> None:
    """Write a run in TREC format: `qid Q0 docid rank score tag`, ordered by query and rank.

    With `metadata` (an ir_metadata dict, `pipeline.provenance`), the file starts with its
    YAML as `#` comment lines between `# ir_metadata.start` and `# ir_metadata.end`.
    """
    ordered = run.sort(["query_id", "rank"])
    header = [] if metadata is None else ir_metadata_lines(metadata)
    lines = header + [
        f"{q} Q0 {d} {r} {s:.6f} {tag}"
        for q, d, r, s in zip(
            ordered["query_id"], ordered["doc_id"], ordered["rank"], ordered["score"], strict=True
        )
    ]
    write_text("\n".join(lines) + "\n", path)


def ir_metadata_lines(metadata: Mapping[str, Any]) -> list[str]:
    """An ir_metadata block (PRIMAD, www.ir-metadata.org): its YAML as `#` comment lines."""
    import yaml

    body = yaml.safe_dump(dict(metadata), sort_keys=False, allow_unicode=True, width=1000)
    return ["# ir_metadata.start", *(f"# {x}" for x in body.splitlines()), "# ir_metadata.end"]


_TREC_COLUMNS = ["query_id", "q0", "doc_id", "file_rank", "score", "tag"]
_TREC_FORMAT = "expected 6 space-separated fields `qid Q0 docid rank score tag` per line"


def _check_trec_rows(df: pl.DataFrame, p: Path) -> None:
    """Reject lines with missing fields, a score that is not a number or is not finite."""
    score = pl.col("score").cast(pl.Float64, strict=False)
    checks = [
        (pl.any_horizontal(pl.col(_TREC_COLUMNS).is_null()), "has missing fields (truncated?)"),
        (score.is_null(), "has a score that is not a number"),
    ]
    for check, what in checks:
        rows = df.filter(check)
        if rows.height:
            row = rows.row(0, named=True)
            text = " ".join(str(row[c]) for c in _TREC_COLUMNS if row[c] is not None)
            raise ArtifactError(
                f"{p}: malformed TREC run: line {row['_line']} {what}: {text!r} "
                f"({rows.height} such lines); {_TREC_FORMAT}."
            )
    rows = df.filter(~score.is_finite())
    if rows.height:
        row = rows.row(0, named=True)
        raise ArtifactError(
            f"{p}: {rows.height} non-finite scores, first query {row['query_id']} "
            f"doc {row['doc_id']} (line {row['_line']}); fix the run file."
        )


def read_trec_run(path: str | Path) -> pl.DataFrame:
    """Read a TREC run file (plain or .gz); rank is recomputed from the score order.

    Per SPEC §1, a run is sorted by score descending and ties keep the file order. Lines
    starting with `#` (an ir_metadata block) are skipped; error line numbers count the others.
    """
    p = _existing(path)
    try:
        df = pl.read_csv(
            p,
            separator=" ",
            has_header=False,
            comment_prefix="#",
            new_columns=_TREC_COLUMNS,
            schema_overrides=dict.fromkeys(_TREC_COLUMNS, pl.Utf8),
        )
    except (pl.exceptions.PolarsError, OSError) as e:
        cause = (str(e).strip().splitlines() or [""])[0]
        raise ArtifactError(f"{p}: malformed TREC run ({cause}); {_TREC_FORMAT}.") from e
    df = df.with_row_index("_line", offset=1)
    _check_trec_rows(df, p)
    df = df.with_columns(pl.col("score").cast(pl.Float64)).drop("_line")
    df = df.with_row_index("_order")
    df = df.sort(["query_id", "score", "_order"], descending=[False, True, False])
    df = df.with_columns(
        pl.int_range(1, pl.len() + 1).over("query_id").cast(pl.Int64).alias("rank")
    )
    out = df.select("query_id", "doc_id", "score", "rank")
    try:
        validate(out.to_arrow(), RUN, str(p))
    except SchemaError as e:
        raise ArtifactError(str(e)) from e
    return out


def read_text(path: str | Path) -> str:
    return _existing(path).read_text(encoding="utf-8")
