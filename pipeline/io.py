"""All file I/O of the pipeline: atomic writes, validated reads.

Every write goes to a temporary file in the destination folder and is renamed into place, so
a crash mid-write leaves either the old artifact or none, never a truncated one. Every read
validates against `pipeline.schemas` and names the file in any error.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import (
    InputError,
    SetupError,
    command,
    is_disk_full,
    storage_errno,
    storage_fix,
    storage_words,
)
from pipeline.schemas import (
    CORPUS,
    QUERIES,
    RUN,
    Schema,
    SchemaError,
    labelled_groups,
    validate,
)
from pipeline.ties import in_input_order


class ArtifactError(InputError):
    """An input file is missing, unreadable or malformed."""


class DiskFullError(SetupError):
    """A write found no room (ENOSPC, EFBIG or EDQUOT); the destination was left as it was."""


def size_text(n: int) -> str:
    """`n` bytes for people: `1.5 GiB`, `12.0 KiB`, `80 B`."""
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"


def disk_full(
    path: str | Path,
    needed: int | None,
    written: int = 0,
    error: BaseException | None = None,
    room: bool = True,
) -> DiskFullError:
    """The one-line error for a write of `path` that found no room (`error`: ENOSPC, EFBIG or
    EDQUOT; ENOSPC when not given): the file, the space it needs (`needed` bytes, an
    estimate; else more than the `written` bytes that fitted), the space left, and the fix
    of the command being run (`pipeline.errors.command`; `room=False`: the DVC cache is no
    place to make room, as for a checkpoint)."""
    dest = Path(path)
    folder = next((p for p in (dest.parent, *dest.parents) if p.exists()), Path("."))
    code = storage_errno(error) if error is not None else None
    need = f"about {size_text(needed)}" if needed else f"more than {size_text(written)}"
    if code in (None, errno.ENOSPC):
        need += f", {size_text(shutil.disk_usage(folder).free)} free in {folder}"
    return DiskFullError(
        f"{dest}: {storage_words(code)} while writing it (it needs {need}); nothing was "
        f"written and the previous version, if any, is intact. {storage_fix(code, room)}"
    )


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str = "", needed: int | None = None) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it onto `path` only on success.

    A write that finds no room (ENOSPC, EFBIG, EDQUOT, from any library) becomes one
    `DiskFullError` naming `path` and the space it needs (`needed` bytes, when the caller
    knows it)."""
    dest = Path(path)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix + ".tmp", dir=dest.parent)
    except OSError as e:
        if is_disk_full(e):
            raise disk_full(dest, needed, error=e) from e
        raise
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, dest)
    except Exception as e:
        if not is_disk_full(e):
            raise
        written = tmp_path.stat().st_size if tmp_path.exists() else 0
        raise disk_full(dest, needed, written, error=e) from e
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(text: str, path: str | Path) -> None:
    data = text.encode("utf-8")
    with atomic_path(path, needed=len(data)) as tmp:
        tmp.write_bytes(data)


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
        raise ArtifactError(f"{p}: file not found. {command().missing}")
    return p


def write_table(df: pl.DataFrame | pa.Table, path: str | Path, schema: Schema) -> None:
    """Validate against `schema` and write Parquet atomically."""
    table = df.to_arrow() if isinstance(df, pl.DataFrame) else df
    table = validate(table, schema, str(path))
    with atomic_path(path, ".parquet", needed=table.nbytes) as tmp:
        pq.write_table(table, tmp, compression="zstd")


REPAIR = (
    "Run `python -m pipeline.doctor --fix` (with hard links a file changed in place changes "
    "its DVC cache copy too, which `dvc repro` would restore; the doctor finds it and reruns "
    "the stage that wrote it), then `dvc repro`."
)


def parquet_columns(path: str | Path) -> list[str]:
    """Column names of a Parquet artifact, from its footer alone (nothing else is read)."""
    p = _existing(path)
    try:
        return list(pq.read_schema(p).names)
    except (pa.ArrowInvalid, OSError) as e:
        raise ArtifactError(
            f"{p}: not a readable Parquet file ({e}); it may be truncated. {REPAIR}"
        ) from e


def read_table(path: str | Path, schema: Schema) -> pl.DataFrame:
    """Read a Parquet artifact, validate it, and return a polars frame."""
    p = _existing(path)
    try:
        table = pq.read_table(p)
    except (pa.ArrowInvalid, OSError) as e:
        raise ArtifactError(
            f"{p}: not a readable Parquet file ({e}); it may be truncated. {REPAIR}"
        ) from e
    out = pl.from_arrow(validate(table, schema, str(p)))
    assert isinstance(out, pl.DataFrame)
    return out


def write_trec_run(
    run: pl.DataFrame, path: str | Path, tag: str, metadata: Mapping[str, Any] | None = None
) -> None:
    """Write a plain TREC run, `qid Q0 docid rank score tag` per line, by query and rank.

    The file has nothing but those lines, so trec_eval, ir_measures, ranx and pytrec_eval read
    it as it is. Scores are written so that they read back to the same number: float32 values
    (every ranker's and bm25s's scores) as their shortest float32 text, others as the shortest
    float64 text. A run file therefore has exactly the ties of the run it was written from.
    With `metadata` (an ir_metadata dict, `pipeline.provenance`), its YAML is written beside
    the run as `<path>.ir_metadata.yaml` (`metadata_path`).
    """
    ordered = run.sort(["query_id", "rank"])
    scores = score_texts(ordered["score"].cast(pl.Float64).to_numpy())
    lines = [
        f"{q} Q0 {d} {r} {s} {tag}"
        for q, d, r, s in zip(
            ordered["query_id"], ordered["doc_id"], ordered["rank"], scores, strict=True
        )
    ]
    write_text("\n".join(lines) + "\n", path)
    if metadata is not None:
        write_text(ir_metadata_yaml(metadata), metadata_path(path))


def write_trec_qrels(qrels: pl.DataFrame, path: str | Path) -> None:
    """Write qrels in TREC format, `qid 0 docid relevance` per line, sorted by query and doc
    id: the file trec_eval, ir_measures, ranx (`Qrels.from_file`) and pytrec_eval read."""
    ordered = qrels.sort(["query_id", "doc_id"])
    lines = [
        f"{q} 0 {d} {int(r)}"
        for q, d, r in zip(
            ordered["query_id"], ordered["doc_id"], ordered["relevance"], strict=True
        )
    ]
    write_text("\n".join(lines) + "\n", path)


def score_texts(scores: np.ndarray) -> list[str]:
    """Each score as the shortest text that reads back to it (float32 when all are)."""
    values = np.asarray(scores, dtype=np.float64)
    as32 = values.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        single = bool(np.array_equal(as32.astype(np.float64), values))
    typed = as32 if single else values
    return [np.format_float_positional(v, unique=True, trim="-") for v in typed]


METADATA_SUFFIX = ".ir_metadata.yaml"


def metadata_path(run_path: str | Path) -> Path:
    """Where a run's ir_metadata lives: `run.trec` → `run.trec.ir_metadata.yaml`."""
    p = Path(run_path)
    return p.with_name(p.name + METADATA_SUFFIX)


def ir_metadata_yaml(metadata: Mapping[str, Any]) -> str:
    """An ir_metadata block (PRIMAD, www.ir-metadata.org) as a YAML document."""
    import yaml

    body = yaml.safe_dump(dict(metadata), sort_keys=False, allow_unicode=True, width=1000)
    return (
        "# ir_metadata (www.ir-metadata.org) of the TREC run beside this file. To annotate the\n"
        "# run itself as the schema describes, prepend `io.ir_metadata_lines(meta)`.\n" + body
    )


def ir_metadata_lines(metadata: Mapping[str, Any]) -> list[str]:
    """An ir_metadata block as `#` comment lines between `# ir_metadata.start` and `.end` (the
    in-file header the schema describes; TREC tools other than ours reject such lines)."""
    import yaml

    body = yaml.safe_dump(dict(metadata), sort_keys=False, allow_unicode=True, width=1000)
    return ["# ir_metadata.start", *(f"# {x}" for x in body.splitlines()), "# ir_metadata.end"]


_TREC_COLUMNS = ["query_id", "q0", "doc_id", "file_rank", "score", "tag"]
_TREC_FORMAT = "expected 6 whitespace-separated fields `qid Q0 docid rank score tag` per line"
# Six fields separated by any run of spaces or tabs (as trec_eval, ir_measures, ranx and
# pytrec_eval read them); a line with fewer or more fields matches nothing (null columns).
_TREC_LINE = r"^\s*" + r"\s+".join([r"(\S+)"] * 6) + r"\s*$"


def _check_trec_rows(df: pl.DataFrame, p: Path) -> None:
    """Reject lines without 6 fields, a score or rank that is not a number, a score that is
    not finite (the rank is otherwise ignored, as by trec_eval)."""
    _check_trec_field_counts(df, p)
    score = pl.col("score").cast(pl.Float64, strict=False)
    checks = [
        (score.is_null(), "has a score that is not a number"),
        (pl.col("file_rank").cast(pl.Float64, strict=False).is_null(),
         "has a rank that is not a number"),
    ]  # fmt: skip
    for check, what in checks:
        rows = df.filter(check)
        if rows.height:
            row = rows.row(0, named=True)
            raise ArtifactError(
                f"{p}: malformed TREC run: line {row['_line']} {what}: {row['_text']!r} "
                f"({rows.height} such lines); {_TREC_FORMAT}."
            )
    rows = df.filter(~score.is_finite())
    if rows.height:
        row = rows.row(0, named=True)
        raise ArtifactError(
            f"{p}: {rows.height} non-finite scores, first query {row['query_id']} "
            f"doc {row['doc_id']} (line {row['_line']}); fix the run file."
        )


def _check_trec_field_counts(df: pl.DataFrame, p: Path) -> None:
    """Reject the first line without exactly 6 fields, saying how many it has (issue 43)."""
    rows = df.with_columns(pl.col("_text").str.count_matches(r"\S+").alias("_n")).filter(
        pl.col("_n") != len(_TREC_COLUMNS)
    )
    if rows.height:
        row = rows.row(0, named=True)
        cut = " (truncated?)" if row["_n"] < len(_TREC_COLUMNS) else ""
        raise ArtifactError(
            f"{p}: malformed TREC run: line {row['_line']} has {row['_n']} fields{cut}: "
            f"{row['_text']!r} ({rows.height} of {df.height} lines); {_TREC_FORMAT}."
        )


def _trec_lines(p: Path) -> pl.DataFrame:
    """`_line, _text`: the file's lines that are neither blank nor `#` comments."""
    import gzip

    try:
        data = p.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{p}: unreadable TREC run ({e}); {_TREC_FORMAT}.") from e
    lines = pl.Series("_text", text.splitlines(), dtype=pl.Utf8)
    frame = pl.DataFrame(lines).with_row_index("_line", offset=1)
    stripped = pl.col("_text").str.strip_chars()
    return frame.filter((stripped != "") & ~stripped.str.starts_with("#"))


def read_trec_run(path: str | Path) -> pl.DataFrame:
    """Read a TREC run file (plain or .gz); rank is recomputed from the score order.

    Fields are separated by any whitespace, as trec_eval reads them. Per SPEC §1, a run is
    sorted by score descending and ties keep the file order (effectiveness metrics then
    break ties as trec_eval does, `pipeline.metrics.effectiveness`). Blank lines and lines
    starting with `#` (e.g. an ir_metadata block) are skipped; errors name the file's line.
    """
    p = _existing(path)
    lines = _trec_lines(p)
    fields = pl.col("_text").str.extract_groups(_TREC_LINE).struct.rename_fields(_TREC_COLUMNS)
    df = lines.with_columns(fields.alias("_f")).unnest("_f")
    if df.height == 0:
        raise ArtifactError(f"{p}: empty TREC run (no result lines); {_TREC_FORMAT}.")
    _check_trec_rows(df, p)
    df = df.with_columns(pl.col("score").cast(pl.Float64)).drop("_line", "_text")
    out = in_input_order(df).select("query_id", "doc_id", "score", "rank")
    try:
        validate(out.to_arrow(), RUN, str(p))
    except SchemaError as e:
        raise ArtifactError(str(e)) from e
    return out


def read_text(path: str | Path) -> str:
    return _existing(path).read_text(encoding="utf-8")


def read_texts(tables: list[tuple[Path, Path]]) -> tuple[dict[str, str], dict[str, str]]:
    """``(query text by id, document text by id)`` of every ``(queries, corpus)`` pair."""
    queries: dict[str, str] = {}
    docs: dict[str, str] = {}
    for q_path, c_path in tables:
        q = read_table(q_path, QUERIES).select("query_id", "text")
        c = read_table(c_path, CORPUS).select("doc_id", "text")
        queries |= dict(q.iter_rows())
        docs |= dict(c.iter_rows())
    return queries, docs


def read_groups(path: str | Path) -> pl.DataFrame | None:
    """``doc_id, group`` of a corpus's documents labelled F, M or N (its ``group`` column
    read alone, checked by ``schemas.labelled_groups``); ``None`` without such a column."""
    if "group" not in parquet_columns(path):
        return None
    table = pq.read_table(_existing(path), columns=["doc_id", "group"])
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return labelled_groups(frame, str(path))
