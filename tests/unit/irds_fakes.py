"""Fake ir_datasets datasets for the loader tests: real namedtuple classes, no download."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ir_datasets.formats import GenericDoc, GenericDocPair, GenericQuery, TrecQrel


class FakeStore:
    """`docs_store()`: `get_many` over a dict, or over a function making a doc from an id."""

    def __init__(
        self, docs: dict[str, Any] | None = None, make: Callable[[str], Any] | None = None
    ):
        self.docs = docs or {}
        self.make = make
        self.calls: list[int] = []

    def get_many(self, doc_ids: Iterable[str]) -> dict[str, Any]:
        ids = list(doc_ids)
        self.calls.append(len(ids))
        if self.make is not None:
            return {d: self.make(d) for d in ids if not d.startswith("missing")}
        return {d: self.docs[d] for d in ids if d in self.docs}


class FakeDataset:
    """The handful of ir_datasets `Dataset` methods the loaders call."""

    def __init__(
        self,
        docs: list[Any] | None = None,
        queries: list[Any] | None = None,
        qrels: list[TrecQrel] | None = None,
        pairs: Callable[[], Iterator[GenericDocPair]] | None = None,
        pairs_count: int | None = None,
        store: FakeStore | None = None,
    ):
        self.docs = docs or []
        self.queries = queries or []
        self.qrels = qrels or []
        self.pairs = pairs
        self.pairs_count = pairs_count
        self.store = store or FakeStore({d.doc_id: d for d in self.docs})

    def docs_iter(self) -> Iterator[Any]:
        return iter(self.docs)

    def docs_count(self) -> int:
        return len(self.docs)

    def docs_cls(self) -> type:
        return type(self.docs[0]) if self.docs else GenericDoc

    def docs_store(self) -> FakeStore:
        return self.store

    def queries_iter(self) -> Iterator[Any]:
        return iter(self.queries)

    def qrels_iter(self) -> Iterator[TrecQrel]:
        return iter(self.qrels)

    def docpairs_iter(self) -> Iterator[GenericDocPair]:
        assert self.pairs is not None
        return self.pairs()

    def docpairs_count(self) -> int | None:
        return self.pairs_count


def loader(datasets: dict[str, FakeDataset]) -> Callable[[str], FakeDataset]:
    """A fake `ir_datasets.load` that knows exactly `datasets`."""

    def load(dataset_id: str) -> FakeDataset:
        if dataset_id not in datasets:
            raise KeyError(f"fake ir_datasets has no {dataset_id!r}")
        return datasets[dataset_id]

    return load


def pairs(n: int, n_queries: int = 50) -> Callable[[], Iterator[GenericDocPair]]:
    """`n` synthetic triples generated on the fly (never held in memory)."""

    def gen() -> Iterator[GenericDocPair]:
        for i in range(n):
            yield GenericDocPair(f"t{i % n_queries}", f"p{i}", f"n{i}")

    return gen


def passage(doc_id: str) -> GenericDoc:
    return GenericDoc(doc_id, f"passage {doc_id} about his work and her garden")


def train_queries(n_queries: int = 50) -> list[GenericQuery]:
    return [GenericQuery(f"t{i}", f"train question {i}") for i in range(n_queries)]
