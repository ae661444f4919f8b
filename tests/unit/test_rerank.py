"""Reranking: ordering, tie-breaking by candidate rank, batching, folds, errors."""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl
import pytest
import torch
from torch import Tensor

from pipeline.models.base import Ranker
from pipeline.rerank import rank_run, rerank, rerank_folds
from tests.unit.tiny_rankers import ARCHS, CANDIDATES, tiny_ranker

QUERIES = {"q1": "career women", "q2": "hair care"}
# first passage word → stub score
WORD_SCORE = {"apple": 0.5, "banana": 0.9, "cherry": 0.5, "grape": 0.5, "lemon": -1.0, "mango": 2.0}
DOCS = {
    "a": "apple",
    "b": "banana pie " * 5,
    "c": "cherry tart " * 2,
    "d": "grape",
    "e": "lemon cake " * 9,
    "f": "mango",
}


class TableRanker(Ranker):
    """Scores a pair by its passage's first word through a fixed table (plus ``offset``)."""

    arch = "table"

    def __init__(self, table: dict[str, float], offset: float = 0.0) -> None:
        base = tiny_ranker("bi_encoder")
        super().__init__(base.encoder, base.tokenizer, base.cfg)
        self.table, self.offset = table, offset
        self.batches: list[int] = []

    def forward(self, qids: Sequence[str], dids: Sequence[str]) -> tuple[Tensor, Tensor]:
        self.batches.append(len(qids))
        words = [self.doc_text(d).split()[0] for d in dids]
        for q in qids:
            self.query_text(q)
        scores = torch.tensor([self.table[w] + self.offset for w in words])
        return scores, torch.zeros(len(qids), 1)


def _stub(offset: float = 0.0, **override: float) -> TableRanker:
    ranker = TableRanker({**WORD_SCORE, **override}, offset)
    ranker.bind(QUERIES, DOCS)
    return ranker


def _candidates() -> pl.DataFrame:
    # rows deliberately not in rank order: ties must follow the candidate rank, not the row
    return pl.DataFrame(
        {
            "query_id": ["q1", "q2", "q1", "q1", "q2", "q1", "q1"],
            "doc_id": ["c", "f", "a", "b", "e", "d", "e"],
            "rank": [3, 2, 2, 4, 1, 1, 5],
            "score": [9.0, 9.0, 9.5, 8.0, 9.9, 10.0, 7.0],
        }
    )


def test_rerank_orders_by_score_with_ties_in_candidate_order() -> None:
    run = rerank(_stub(), _candidates(), batch_size=2)
    assert run.schema == pl.Schema(
        {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}
    )
    q1 = run.filter(pl.col("query_id") == "q1")
    # b 0.9 first; a, c, d tie at 0.5 → candidate ranks 2, 3, 1 → d, a, c; e -1.0 last
    assert q1["doc_id"].to_list() == ["b", "d", "a", "c", "e"]
    assert q1["rank"].to_list() == [1, 2, 3, 4, 5]
    assert q1["score"].to_list() == pytest.approx([0.9, 0.5, 0.5, 0.5, -1.0])
    q2 = run.filter(pl.col("query_id") == "q2")
    assert q2["doc_id"].to_list() == ["f", "e"] and q2["rank"].to_list() == [1, 2]
    assert run["query_id"].to_list()[:1] == ["q1"]  # queries keep their first-appearance order


def test_default_scoring_runs_in_batches() -> None:
    ranker = _stub()
    rerank(ranker, _candidates(), batch_size=3)
    assert ranker.batches == [3, 3, 1]
    assert not ranker.training  # scored in eval mode


def test_non_finite_score_names_query_and_doc() -> None:
    with pytest.raises(ValueError, match=r"query 'q1', doc 'c' is not finite"):
        rerank(_stub(cherry=math.nan), _candidates(), batch_size=4)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(
    ("column", "message"),
    [
        ("doc_id", r"doc_id 'zzz' has no text in data/corpus\.parquet"),
        ("query_id", r"query_id 'zzz' has no text in data/queries\.parquet"),
    ],
)
def test_unknown_ids_are_named(arch: str, column: str, message: str) -> None:
    cands = CANDIDATES.with_columns(
        pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("zzz")).otherwise(column).alias(column)
    )
    with pytest.raises(ValueError, match=message):
        rerank(tiny_ranker(arch), cands, batch_size=4)


def test_missing_columns_and_bad_batch_size_are_named() -> None:
    with pytest.raises(ValueError, match=r"candidates lack columns \['rank'\]"):
        rerank(_stub(), _candidates().drop("rank"))
    with pytest.raises(ValueError, match=r"batch_size must be >= 1; got 0"):
        rerank(_stub(), _candidates(), batch_size=0)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_real_model_scores_do_not_depend_on_the_batch_size(arch: str) -> None:
    ranker = tiny_ranker(arch).train()  # rerank scores in eval mode whatever the caller's mode
    batched = rerank(ranker, CANDIDATES, batch_size=3)
    single = rerank(ranker.train(), CANDIDATES, batch_size=1)
    joined = batched.join(single, on=["query_id", "doc_id"], suffix="_1")
    assert joined.height == CANDIDATES.height
    assert joined["score"].to_list() == pytest.approx(joined["score_1"].to_list(), abs=1e-5)


@pytest.mark.parametrize("arch", ["bi_encoder", "late_interaction"])
def test_single_encoders_batch_texts_by_length(arch: str) -> None:
    """Queries, then documents, in batches of increasing length (less padding)."""
    ranker = tiny_ranker(arch)
    widths: list[tuple[str, int]] = []
    real = ranker.encode

    def spy(
        keys: Sequence[tuple[str, ...]], toks: Sequence[tuple[list[int], list[int]]]
    ) -> tuple[Tensor, Tensor]:
        widths.append((keys[0][0], max(len(t[0]) for t in toks)))
        return real(keys, toks)

    ranker.encode = spy  # type: ignore[method-assign]
    rerank(ranker, CANDIDATES, batch_size=2)
    kinds = [k for k, _ in widths]
    assert kinds == sorted(kinds, key="qd".index)
    for kind in "qd":
        sizes = [w for k, w in widths if k == kind]
        assert sizes == sorted(sizes)


def test_rerank_folds_uses_each_folds_model() -> None:
    cands = _candidates().with_columns(
        fold=pl.when(pl.col("query_id") == "q1").then(pl.lit(1)).otherwise(pl.lit(0))
    )
    loaded: list[int] = []

    def load(fold: int) -> Ranker:
        loaded.append(fold)
        return TableRanker(WORD_SCORE, offset=100.0 * fold)

    run, moved = rerank_folds(load, cands, (QUERIES, DOCS), batch_size=4)
    assert loaded == [0, 1] and moved is None
    assert run.columns == ["query_id", "doc_id", "score", "rank"]
    by_pair = {(q, d): s for q, d, s in run.select("query_id", "doc_id", "score").iter_rows()}
    assert by_pair[("q2", "f")] == pytest.approx(2.0)  # fold 0: offset 0
    assert by_pair[("q1", "b")] == pytest.approx(100.9)  # fold 1: offset 100
    assert run.height == cands.height
    # a held-out collection: every fold's model ranks all of it, each list tagged with its fold
    transfer = _candidates().filter(pl.col("query_id") == "q2")
    _, moved = rerank_folds(load, cands, (QUERIES, DOCS), batch_size=4, transfer=transfer)
    n = transfer.height
    assert moved is not None and moved["fold"].to_list() == [0] * n + [1] * n
    scores = dict(zip(zip(moved["fold"], moved["doc_id"], strict=True), moved["score"],
                      strict=True))  # fmt: skip
    assert scores[(1, "f")] == pytest.approx(scores[(0, "f")] + 100.0)


def test_rank_run_restarts_rank_per_query() -> None:
    cands = pl.DataFrame(
        {
            "query_id": ["x", "y", "x"],
            "doc_id": ["1", "2", "3"],
            "rank": [1, 1, 2],
            "score": [0.0] * 3,
        }
    )
    run = rank_run(cands, [1.0, 1.0, 3.0])
    assert run.rows() == [("x", "3", 3.0, 1), ("x", "1", 1.0, 2), ("y", "2", 1.0, 1)]
