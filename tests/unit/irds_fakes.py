"""Fake ir_datasets datasets for what the real library cannot reach in a test: a triples
stream of any length, generated on the fly, whose `docpairs_count` is that length (the real
`msmarco-passage/train/triples-small` answers 39,780,811 from its metadata). Everything else
is tested on the real library over the miniature cache (`tests/irds_miniature.py`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ir_datasets.formats import GenericDocPair, GenericQuery


class FakeDataset:
    """The `docpairs_*` and `queries_iter` methods the triples loader calls."""

    def __init__(
        self,
        queries: list[Any] | None = None,
        pairs: Callable[[], Iterator[GenericDocPair]] | None = None,
        pairs_count: int | None = None,
    ):
        self.queries = queries or []
        self.pairs = pairs
        self.pairs_count = pairs_count

    def queries_iter(self) -> Iterator[Any]:
        return iter(self.queries)

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


def train_queries(n_queries: int = 50) -> list[GenericQuery]:
    return [GenericQuery(f"t{i}", f"train question {i}") for i in range(n_queries)]
