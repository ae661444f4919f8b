"""Reranking: ordering, tie-breaking by candidate rank, length-sorted batching, errors."""

from __future__ import annotations

import math

import polars as pl
import pytest
import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from pipeline.rerank import rank_run, rerank
from pipeline.train.model import CrossEncoder, load_model

QUERIES = {"q1": "career women", "q2": "hair care"}
# first passage word → stub score; passages of different lengths so batching reorders them
WORD_SCORE = {"apple": 0.5, "banana": 0.9, "cherry": 0.5, "grape": 0.5, "lemon": -1.0, "mango": 2.0}
DOCS = {
    "a": "apple",
    "b": "banana pie " * 5,
    "c": "cherry tart " * 2,
    "d": "grape",
    "e": "lemon cake " * 9,
    "f": "mango",
}


class TableModel(CrossEncoder):
    """Scores a pair by the first passage token (token type 1) through a fixed table."""

    def __init__(self, base: CrossEncoder, table: dict[int, float]) -> None:
        super().__init__(base.encoder)
        self.table = table
        self.widths: list[int] = []

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None
    ) -> Tensor:
        assert token_type_ids is not None
        self.widths.append(int(input_ids.shape[1]))
        first = token_type_ids.argmax(dim=1)
        tokens = input_ids.gather(1, first[:, None])[:, 0].tolist()
        return torch.tensor([self.table[t] for t in tokens], dtype=torch.float32)


@pytest.fixture(scope="module")
def tiny() -> tuple[PreTrainedTokenizerBase, CrossEncoder]:
    return load_model("tiny-random-bert", None, seed=0)


def _stub(tiny: tuple[PreTrainedTokenizerBase, CrossEncoder], **override: float) -> TableModel:
    tok, model = tiny
    scores = {**WORD_SCORE, **override}
    table = {tok(w, add_special_tokens=False)["input_ids"][0]: s for w, s in scores.items()}
    return TableModel(model, table)


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


def test_rerank_orders_by_score_with_ties_in_candidate_order(
    tiny: tuple[PreTrainedTokenizerBase, CrossEncoder],
) -> None:
    model = _stub(tiny)
    run = rerank(
        model,
        tiny[0],
        _candidates(),
        QUERIES,
        DOCS,
        batch_size=2,
        max_len=32,
        q_len=8,
        device="cpu",
    )
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


def test_batches_are_length_sorted(tiny: tuple[PreTrainedTokenizerBase, CrossEncoder]) -> None:
    model = _stub(tiny)
    rerank(
        model,
        tiny[0],
        _candidates(),
        QUERIES,
        DOCS,
        batch_size=2,
        max_len=64,
        q_len=8,
        device="cpu",
    )
    assert model.widths == sorted(model.widths) and len(model.widths) == 4


def test_non_finite_score_names_query_and_doc(
    tiny: tuple[PreTrainedTokenizerBase, CrossEncoder],
) -> None:
    model = _stub(tiny, cherry=math.nan)
    with pytest.raises(ValueError, match=r"query 'q1', doc 'c' is not finite"):
        rerank(
            model,
            tiny[0],
            _candidates(),
            QUERIES,
            DOCS,
            batch_size=4,
            max_len=32,
            q_len=8,
            device="cpu",
        )


def test_unknown_doc_is_named(tiny: tuple[PreTrainedTokenizerBase, CrossEncoder]) -> None:
    cands = _candidates().with_columns(pl.lit("zzz").alias("doc_id"))
    with pytest.raises(ValueError, match=r"document id 'zzz' not found"):
        rerank(
            tiny[1], tiny[0], cands, QUERIES, DOCS, batch_size=4, max_len=32, q_len=8, device="cpu"
        )


def test_missing_columns_are_named(tiny: tuple[PreTrainedTokenizerBase, CrossEncoder]) -> None:
    with pytest.raises(ValueError, match=r"candidates lack columns \['rank'\]"):
        rerank(tiny[1], tiny[0], _candidates().drop("rank"), QUERIES, DOCS, device="cpu")


def test_real_model_scores_match_unbatched(
    tiny: tuple[PreTrainedTokenizerBase, CrossEncoder],
) -> None:
    tok, model = tiny
    cands = _candidates()
    model.train()
    batched = rerank(
        model, tok, cands, QUERIES, DOCS, batch_size=3, max_len=32, q_len=8, device="cpu"
    )
    single = rerank(
        model, tok, cands, QUERIES, DOCS, batch_size=1, max_len=32, q_len=8, device="cpu"
    )
    joined = batched.join(single, on=["query_id", "doc_id"], suffix="_1")
    assert joined.height == cands.height
    assert joined["score"].to_list() == pytest.approx(joined["score_1"].to_list(), abs=1e-5)
    assert model.training  # the caller's mode is restored


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
