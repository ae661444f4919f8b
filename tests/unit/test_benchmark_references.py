"""The benchmarks' naive sides compute what ours computes (so their speed-ups compare like
with like), on the benchmarks' own synthetic inputs at a small size."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
import torch

from benchmarks.bench_metrics import naive, ours, tables
from benchmarks.naive_ranker import encode_padded, naive_rerank
from pipeline.rerank import rerank
from pipeline.train.batching import PairEncoder, collate
from pipeline.train.model import CrossEncoder, load_model


def test_naive_metric_suite_equals_ours() -> None:
    t = tables(40, 30, seed=3)
    t["doc_scores"] = t["doc_scores"].filter(pl.int_range(pl.len()) % 7 != 0)  # missing → ζ 1
    t["qrels"] = t["qrels"].head(35)  # 5 queries without a relevant document
    expected, got = naive(t), ours(t)
    assert len(expected) == 2 * (2 + 6 + 1 + 1)  # MRR, nDCG, 6 ARaB, NFaiRR, LIWC at @10, @20
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name


def test_naive_metric_suite_can_disagree() -> None:
    t = tables(40, 30, seed=3)
    other = dict(t, run=t["run"].with_columns(pl.col("rank").reverse().over("query_id")))
    assert naive(other)["MRR@10"] != pytest.approx(ours(t)["MRR@10"])


def _tiny() -> tuple[Any, CrossEncoder]:
    tokenizer, model = load_model("tiny-random-bert", None, seed=0)
    return tokenizer, model.eval()


QUERIES = {"q0": "who is a nurse", "q1": "doctor salary in the city"}
DOCS = {
    f"d{i}": " ".join(["she", "works", "as", "a", "nurse", "and", "he", "is", "a", "doctor"] * i)
    for i in range(1, 7)
}


def test_dynamic_padding_scores_equal_max_len_padding() -> None:
    """Our pre-tokenised, length-sorted, dynamically padded reranking gives the naive
    scores (tokenised per batch, padded to max_len, candidate order)."""
    tokenizer, model = _tiny()
    cands = pl.DataFrame(
        {
            "query_id": [q for q in QUERIES for _ in DOCS],
            "doc_id": list(DOCS) * 2,
            "rank": list(range(1, 7)) * 2,
            "score": [0.0] * 12,
        }
    )
    run = rerank(model, tokenizer, cands, QUERIES, DOCS, batch_size=4, max_len=48, q_len=16)
    got = {(q, d): s for q, d, s in run.select("query_id", "doc_id", "score").iter_rows()}
    pairs = [(QUERIES[q], DOCS[d]) for q, d in cands.select("query_id", "doc_id").iter_rows()]
    expected = naive_rerank(model, tokenizer, pairs, batch_size=5, max_len=48)
    keys = list(cands.select("query_id", "doc_id").iter_rows())
    assert [got[k] for k in keys] == pytest.approx(expected, abs=1e-5)


def test_training_loss_with_dynamic_padding_equals_max_len_padding() -> None:
    """One batch's margin loss and gradient: our collated inputs vs naive max_len padding."""
    tokenizer, model = _tiny()
    triples = [(QUERIES["q0"], DOCS["d1"], DOCS["d5"]), (QUERIES["q1"], DOCS["d6"], DOCS["d2"])]
    encoder = PairEncoder(tokenizer, 96, 16).add(QUERIES, DOCS, ["q0", "q1"], list(DOCS))
    ids = [("q0", "d1", "d5"), ("q1", "d6", "d2")]
    collated = collate(
        [encoder.pair(q, p) for q, p, _ in ids] + [encoder.pair(q, n) for q, _, n in ids]
    )
    assert collated["input_ids"].shape[1] < 96  # really padded less
    grads = []
    for inputs in (collated, None):
        model.zero_grad()
        if inputs is None:
            queries = [q for q, _, _ in triples] * 2
            docs = [p for _, p, _ in triples] + [n for _, _, n in triples]
            inputs = encode_padded(tokenizer, queries, docs, 96)
        pos, neg = model(**inputs).split(2)
        loss = torch.clamp(1 - torch.tanh(pos) + torch.tanh(neg), min=0).mean()
        loss.backward()
        grads.append((float(loss.detach()), model.head.weight.grad.clone()))
    assert grads[0][0] == pytest.approx(grads[1][0], abs=1e-6)
    assert torch.allclose(grads[0][1], grads[1][1], atol=1e-5)
