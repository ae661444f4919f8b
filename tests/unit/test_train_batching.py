"""Pair construction (truncation budget, special tokens) and dynamic padding."""

from __future__ import annotations

import pytest
from transformers import PreTrainedTokenizerBase

from pipeline.train.batching import PairEncoder, collate, tokenize_texts
from pipeline.train.model import load_model

QUERIES = {"short": "hair loss", "long": " ".join(["women"] * 50)}
DOCS = {"short": "men and women", "long": " ".join(["doctor"] * 400), "empty": ""}


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerBase:
    return load_model("tiny-random-bert", None, seed=0)[0]


@pytest.fixture(scope="module")
def encoder(tokenizer: PreTrainedTokenizerBase) -> PairEncoder:
    return PairEncoder(tokenizer, max_len=24, q_len=8).add(QUERIES, DOCS, QUERIES, DOCS)


@pytest.mark.parametrize("qid", sorted(QUERIES))
@pytest.mark.parametrize("did", sorted(DOCS))
def test_pair_respects_budget_and_special_tokens(encoder: PairEncoder, qid: str, did: str) -> None:
    ids, types = encoder.pair(qid, did)
    n_q = types.count(0) - 2
    assert len(ids) == len(types) <= 24
    assert n_q <= 8
    assert ids[0] == encoder.cls_id
    assert ids[n_q + 1] == encoder.sep_id and ids[-1] == encoder.sep_id
    assert ids.count(encoder.cls_id) == 1 and ids.count(encoder.sep_id) == 2
    assert types == [0] * (n_q + 2) + [1] * (len(ids) - n_q - 2)
    if did == "long":  # a long passage fills the remaining budget exactly
        assert len(ids) == 24


def test_pair_content_is_query_then_passage(
    encoder: PairEncoder, tokenizer: PreTrainedTokenizerBase
) -> None:
    ids, _ = encoder.pair("short", "short")
    q = tokenizer("hair loss", add_special_tokens=False)["input_ids"]
    d = tokenizer("men and women", add_special_tokens=False)["input_ids"]
    assert ids == [encoder.cls_id, *q, encoder.sep_id, *d, encoder.sep_id]
    long_q, _ = encoder.pair("long", "long")
    assert len(long_q) == 24 and long_q.count(encoder.sep_id) == 2
    assert long_q[1:9] == tokenizer(QUERIES["long"], add_special_tokens=False)["input_ids"][:8]


def test_collate_pads_to_longest_in_batch(encoder: PairEncoder) -> None:
    pairs = [encoder.pair("short", "short"), encoder.pair("short", "empty")]
    out = collate(pairs, pad_id=encoder.pad_id)
    width = max(len(p[0]) for p in pairs)
    assert width < 24  # dynamic padding, not max_len
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        assert tuple(out[key].shape) == (2, width)
    short = len(pairs[1][0])
    assert out["attention_mask"][1].tolist() == [1] * short + [0] * (width - short)
    assert out["input_ids"][1, short:].tolist() == [encoder.pad_id] * (width - short)
    assert out["input_ids"][0].tolist() == pairs[0][0]


def test_collate_rejects_empty_batch() -> None:
    with pytest.raises(ValueError, match="empty batch"):
        collate([])


def test_unknown_id_names_it(tokenizer: PreTrainedTokenizerBase) -> None:
    with pytest.raises(ValueError, match=r"document id 'nope' not found"):
        tokenize_texts(tokenizer, DOCS, ["short", "nope"], 10, "document")


def test_bad_lengths_rejected(tokenizer: PreTrainedTokenizerBase) -> None:
    with pytest.raises(ValueError, match=r"q_len <= max_len - 3"):
        PairEncoder(tokenizer, max_len=16, q_len=14)
