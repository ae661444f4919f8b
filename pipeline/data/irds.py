"""Shared helpers for the ir_datasets sources (MS MARCO passage, TREC Fair 2022).

- `Loader`: the injected `ir_datasets.load`; tests pass a function returning fake datasets
  whose iterators yield the real ir_datasets namedtuples.
- `preflight` / `guarded`: fail at once, with a message saying what to download and how,
  when a dataset is neither in the ir_datasets cache nor reachable over the network.
- `write_batches`: stream record batches into one Parquet file (row group per batch,
  validated against `pipeline.schemas`, temp file renamed into place), so memory stays
  bounded by the batch size.
- `lookup_docs`: batched `docs_store().get_many` for the ids a stage needs.

BM25 over a whole collection, streamed, is `pipeline.retrieval.bm25.bm25_over_docs` (the
project's one index builder).
"""

from __future__ import annotations

import codecs
import contextlib
import locale
import logging
import os
import shlex
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import InputError, SetupError
from pipeline.io import atomic_path
from pipeline.progress import progress
from pipeline.schemas import Schema, validate

log = logging.getLogger(__name__)

Loader = Callable[[str], Any]
Probe = Callable[[str], str | None]
T = TypeVar("T")
CANDIDATE_SCHEMA = {"query_id": pl.Utf8, "doc_id": pl.Utf8, "rank": pl.Int64, "score": pl.Float64}

# Where ir_datasets downloads each collection from (ir_datasets/etc/downloads.json).
DOWNLOAD_HOSTS = {
    "msmarco-passage": "msmarco.z22.web.core.windows.net",
    "trec-fair": "data.boisestate.edu",
}
PROBE_TIMEOUT_S = 3.0
MARKERS = ("irds_version.txt",)  # written by ir_datasets before any download
TERMS = {"msmarco-passage": " (MS MARCO asks you to accept its terms)"}


class SourceUnavailableError(SetupError):
    """An ir_datasets file is neither cached locally nor downloadable from here."""


def default_loader() -> Loader:
    """`ir_datasets.load`, imported lazily (importing ir_datasets registers every dataset)."""
    import ir_datasets

    load: Loader = ir_datasets.load
    return load


def irds_home() -> Path:
    """The ir_datasets cache folder (`IR_DATASETS_HOME`, default `~/.ir_datasets`)."""
    return Path(os.environ.get("IR_DATASETS_HOME", Path.home() / ".ir_datasets"))


def probe_host(host: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None when `host:443` accepts a TCP connection within `timeout` s, else the reason."""
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return None
    except OSError as e:
        return f"{type(e).__name__}: {e}"


Need = tuple[str, str]  # (ir_datasets id, entity: docs | queries | qrels | docpairs)

# Needs whose files the project streams itself (`pipeline.data.trec_fair_articles`), because
# `ir_datasets export … docs` would first build ir_datasets' docstore (for TREC Fair 2022: all
# 6.46M metadata records in one dict, a projected 24 GiB: benchmarks/README.md). They are
# fetched by URL into the cache paths ir_datasets reads: (collection folder, keys of
# ir_datasets' etc/downloads.json).
FILE_NEEDS: dict[Need, tuple[str, tuple[str, ...]]] = {
    ("trec-fair/2022/train", "docs"): ("trec-fair", ("2022/docs", "2022/metadata")),
}


def download_files(top: str, keys: Sequence[str]) -> list[tuple[str, Path, int | None, str]]:
    """`(url, cache path, size in bytes, md5)` of ir_datasets' downloads `keys` of `top`."""
    from ir_datasets.util import DownloadConfig

    entries = DownloadConfig.context(top).contents()
    out = []
    for key in keys:
        e = entries[key]
        path = irds_home() / top / e["cache_path"]
        out.append((e["url"], path, e.get("size_hint"), e.get("expected_md5", "")))
    return out


def fetch_commands(needs: Sequence[Need]) -> list[str]:
    """Shell commands that download what `needs` read into the ir_datasets cache: `ir_datasets
    export` (the files and the derived caches it builds), or `curl` into the cache path for
    the files in `FILE_NEEDS`."""
    commands: list[str] = []
    for need in needs:
        if need not in FILE_NEEDS:
            commands.append(f"ir_datasets export {need[0]} {need[1]} > /dev/null")
            continue
        for url, path, _, _ in download_files(*FILE_NEEDS[need]):
            command = f"curl -fL --create-dirs -o {shlex.quote(str(path))} {shlex.quote(url)}"
            if command not in commands:
                commands.append(command)
    return commands


def _sizes(needs: Sequence[Need]) -> str:
    files = [f for n in needs if n in FILE_NEEDS for f in download_files(*FILE_NEEDS[n])]
    unique = {path.name: (size or 0, md5) for _, path, size, md5 in files}
    parts = [f"{name} {size / 1e9:.2f} GB, md5 {md5}" for name, (size, md5) in unique.items()]
    return f" ({'; '.join(parts)})" if parts else ""


def how_to_fetch(needs: Sequence[Need]) -> str:
    """The fix line of every download error: what to fetch, and how."""
    top = needs[0][0].split("/")[0]
    commands = " && ".join(fetch_commands(needs))
    return (
        f"Fix: on a machine with network run `{commands}` (downloads into "
        f"{irds_home() / top}{TERMS.get(top, '')}{_sizes(needs)}), then copy that folder to "
        "this machine (or point IR_DATASETS_HOME at it) and rerun."
    )


def has_cache(folder: Path) -> bool:
    """True when `folder` holds a downloaded file (not just ir_datasets' version marker)."""
    if not folder.is_dir():
        return False
    return any(
        p.is_file() and p.stat().st_size > 0 and p.name not in MARKERS for p in folder.rglob("*")
    )


def preflight(needs: Sequence[Need], probe: Probe = probe_host, home: Path | None = None) -> None:
    """Raise `SourceUnavailableError` at once when the collection of `needs` has no local cache
    and its download host is unreachable (one short TCP probe, never a long download wait)."""
    top = needs[0][0].split("/")[0]
    folder = (home or irds_home()) / top
    if has_cache(folder):
        return
    host = DOWNLOAD_HOSTS.get(top)
    reason = probe(host) if host else None
    if reason is not None:
        wanted = ", ".join(f"{d} {e}" for d, e in needs)
        raise SourceUnavailableError(
            f"{wanted}: expected in the ir_datasets cache {folder}, which holds no download, "
            f"or from {host}, which is unreachable ({reason}). " + how_to_fetch(needs)
        )


@contextlib.contextmanager
def guarded(dataset_id: str, *entities: str) -> Iterator[None]:
    """Turn an ir_datasets download failure inside the block into `SourceUnavailableError`."""
    try:
        yield
    except SourceUnavailableError:
        raise
    except (OSError, RuntimeError) as e:  # requests' ConnectionError is an OSError
        what = " and ".join(", ".join(entities).rsplit(", ", 1))
        raise SourceUnavailableError(
            f"{dataset_id}: could not read {what} through ir_datasets "
            f"({type(e).__name__}: {str(e)[:300]}). "
            + how_to_fetch([(dataset_id, entity) for entity in entities])
        ) from e


def check_text_encoding(dataset_id: str) -> None:
    """ir_datasets reads TSV files (`TsvDocs`, `TsvQueries`, `TsvDocPairs`) through
    `io.TextIOWrapper` without an encoding, i.e. in the locale's; with a non-UTF-8 locale and
    UTF-8 mode off (`LC_ALL=C PYTHONUTF8=0`) the first non-ASCII passage raises
    `UnicodeDecodeError` deep inside ir_datasets. Stop before reading, with the fix."""
    encoding = locale.getpreferredencoding(False)
    try:
        utf8 = codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        utf8 = False
    if not utf8:
        raise SourceUnavailableError(
            f"{dataset_id}: ir_datasets reads its TSV files in the locale's text encoding, "
            f"here {encoding!r} (LC_ALL={os.environ.get('LC_ALL', '')!r}, "
            f"PYTHONUTF8={os.environ.get('PYTHONUTF8', '')!r}), and the collection is UTF-8 "
            "with non-ASCII text, so reading it would fail. Fix: rerun with PYTHONUTF8=1 "
            "(or a UTF-8 locale, e.g. LC_ALL=C.UTF-8)."
        )


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of `size` items (the last one shorter)."""
    if size < 1:
        raise InputError(f"batch size must be >= 1, got {size}")
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def select_rows(total: int, n: int, seed: int) -> np.ndarray:
    """`n` distinct row indices of `range(total)`, uniform and seeded, sorted ascending."""
    if n > total:
        raise InputError(
            f"sample: asked for {n} rows but the stream has {total}; "
            "ask for fewer rows (dataset.msmarco_passage.n_triples) or take the first rows instead"
        )
    return np.sort(np.random.default_rng(seed).choice(total, size=n, replace=False))


def sample_stream(items: Iterable[Any], rows: np.ndarray) -> Iterator[Any]:
    """The items at the sorted indices `rows`, skipping the others without holding them."""
    it = iter(items)
    position = 0
    for index in rows.tolist():
        item = next(islice(it, index - position, None), None)
        if item is None:
            raise InputError(
                f"stream ended before row {index}; expected at least {rows[-1] + 1} "
                "rows (is the ir_datasets download truncated? delete it and rerun)"
            )
        position = index + 1
        yield item


def arrow_schema(schema: Schema, columns: Sequence[str]) -> pa.Schema:
    """The Arrow schema of `columns` (required ones first, in `schema`'s canonical order)."""
    cols = schema.columns()
    unknown = [c for c in columns if c not in cols]
    if unknown:
        raise InputError(f"columns {unknown} are not in the {schema.name!r} schema {list(cols)}")
    return pa.schema([(c, cols[c]) for c in cols if c in columns or c in schema.required])


def write_batches(
    batches: Iterable[pa.Table | pl.DataFrame], path: str | Path, schema: Schema
) -> int:
    """Write `batches` as the row groups of one Parquet file; return the number of rows.

    Each batch is validated against `schema` (types, null ids, duplicate keys within the
    batch; the caller keeps keys unique across batches). Written to a temporary file and
    renamed onto `path` only when every batch succeeded.
    """
    rows = 0
    writer: pq.ParquetWriter | None = None
    with atomic_path(path, ".parquet") as tmp:
        try:
            for batch in batches:
                table = batch.to_arrow() if isinstance(batch, pl.DataFrame) else batch
                table = validate(table, schema, str(path))
                if writer is None:
                    writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
                writer.write_table(table)
                rows += table.num_rows
            if writer is None:  # no batch at all: an empty file with the required columns
                empty = pa.schema(list(schema.required.items()))
                pq.write_table(empty.empty_table(), tmp, compression="zstd")
        finally:
            if writer is not None:
                writer.close()
    return rows


def lookup_docs(
    docs_store: Any, doc_ids: Sequence[str], batch_size: int, desc: str = "docs"
) -> Iterator[list[Any]]:
    """Batches of documents for `doc_ids` (in id order) via `docs_store.get_many`.

    Ids the store lacks are logged (count and first few) and skipped.
    """
    n_missing = 0
    first_missing: list[str] = []
    bar = progress(total=len(doc_ids), desc=desc, unit="doc", mininterval=5.0)
    for chunk in batched(doc_ids, batch_size):
        found = docs_store.get_many(chunk)
        lacking = [d for d in chunk if d not in found]
        n_missing += len(lacking)
        first_missing += lacking[: 5 - len(first_missing)]
        bar.update(len(chunk))
        yield [found[d] for d in chunk if d in found]
    bar.close()
    if n_missing:
        log.warning("%s: %d ids not in the docs store, first %s", desc, n_missing, first_missing)


