"""The generated source served as ir_datasets ``Dataset`` objects (real namedtuples, streamed).

``loader(folder)`` is a drop-in for ``ir_datasets.load`` that knows the three ids the MS MARCO
loader (``pipeline/data/msmarco.py``) reads, with exactly the methods it calls:

- ``msmarco-passage``: ``docs_iter`` (``GenericDoc`` streamed from ``docs.parquet`` in Arrow
  record batches), ``docs_count``, ``docs_cls``, ``docs_store().get_many`` (a seek and a read
  per passage in ``docstore.bin``, as ir_datasets' docstore does; nothing is held);
- ``msmarco-passage/train/triples-small``: ``docpairs_iter`` (``GenericDocPair``),
  ``docpairs_count``, ``queries_iter`` (``GenericQuery``, the 808,731 training queries);
- ``msmarco-passage/dev``: ``qrels_iter`` (``TrecQrel``), ``queries_iter``.

No iterator ever materialises the whole collection: each reads one record batch at a time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow.parquet as pq
from ir_datasets.formats import GenericDoc, GenericDocPair, GenericQuery, TrecQrel

COLLECTION_ID = "msmarco-passage"
TRIPLES_ID = "msmarco-passage/train/triples-small"
DEV_ID = "msmarco-passage/dev"
BATCH = 65_536


def _rows(path: Path, columns: list[str], cls: Callable[..., Any]) -> Iterator[Any]:
    """Rows of ``columns`` of a Parquet file as ``cls`` tuples, one record batch at a time."""
    reader = pq.ParquetFile(path)
    for batch in reader.iter_batches(batch_size=BATCH, columns=columns):
        yield from map(cls, *(batch.column(c).to_pylist() for c in columns))


def _count(path: Path) -> int:
    return int(pq.ParquetFile(path).metadata.num_rows)


class DocStore:
    """``docs_store()``: random access to ``docstore.bin`` by ``doc_id`` (its row number)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "docstore.bin"
        self.offsets = np.load(folder / "docstore.offsets.npy")
        self.n = self.offsets.size - 1
        self.reads = 0

    def _index(self, doc_id: str) -> int | None:
        if not doc_id.isdigit():
            return None
        i = int(doc_id)
        return i if i < self.n else None

    def get_many(self, doc_ids: Iterable[str]) -> dict[str, GenericDoc]:
        """The documents of ``doc_ids`` that exist (ids the store lacks are left out)."""
        out: dict[str, GenericDoc] = {}
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for doc_id in doc_ids:
                i = self._index(doc_id)
                if i is None:
                    continue
                start, end = int(self.offsets[i]), int(self.offsets[i + 1])
                out[doc_id] = GenericDoc(doc_id, os.pread(fd, end - start, start).decode())
                self.reads += 1
        finally:
            os.close(fd)
        return out

    def get(self, doc_id: str) -> GenericDoc:
        found = self.get_many([doc_id])
        if doc_id not in found:
            raise KeyError(doc_id)
        return found[doc_id]


class Collection:
    """``ir_datasets.load("msmarco-passage")``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._store: DocStore | None = None

    def docs_iter(self) -> Iterator[GenericDoc]:
        return _rows(self.folder / "docs.parquet", ["doc_id", "text"], GenericDoc)

    def docs_count(self) -> int:
        return _count(self.folder / "docs.parquet")

    def docs_cls(self) -> type[NamedTuple]:
        return GenericDoc

    def docs_store(self) -> DocStore:
        if self._store is None:
            self._store = DocStore(self.folder)
        return self._store


class Triples:
    """``ir_datasets.load("msmarco-passage/train/triples-small")``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def docpairs_iter(self) -> Iterator[GenericDocPair]:
        columns = ["query_id", "doc_id_a", "doc_id_b"]
        return _rows(self.folder / "triples.parquet", columns, GenericDocPair)

    def docpairs_count(self) -> int:
        return _count(self.folder / "triples.parquet")

    def queries_iter(self) -> Iterator[GenericQuery]:
        return _rows(self.folder / "train_queries.parquet", ["query_id", "text"], GenericQuery)

    def queries_count(self) -> int:
        return _count(self.folder / "train_queries.parquet")


class Dev:
    """``ir_datasets.load("msmarco-passage/dev")``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def qrels_iter(self) -> Iterator[TrecQrel]:
        path = self.folder / "dev_qrels.parquet"
        return _rows(path, ["query_id", "doc_id", "relevance"], _qrel)

    def queries_iter(self) -> Iterator[GenericQuery]:
        return _rows(self.folder / "dev_queries.parquet", ["query_id", "text"], GenericQuery)


def _qrel(query_id: str, doc_id: str, relevance: int) -> TrecQrel:
    return TrecQrel(query_id, doc_id, int(relevance), "0")


def loader(folder: str | Path) -> Callable[[str], Any]:
    """A fake ``ir_datasets.load`` serving the source generated into ``folder``."""
    root = Path(folder)
    if not (root / "meta.json").is_file():
        raise FileNotFoundError(
            f"{root}: no generated source (meta.json missing); run "
            f"`python -m benchmarks.rehearsal.generate --out {root}` first"
        )
    datasets: dict[str, Any] = {
        COLLECTION_ID: Collection(root),
        TRIPLES_ID: Triples(root),
        DEV_ID: Dev(root),
    }

    def load(dataset_id: str) -> Any:
        if dataset_id not in datasets:
            raise KeyError(f"rehearsal source has no {dataset_id!r}; known: {sorted(datasets)}")
        return datasets[dataset_id]

    return load
