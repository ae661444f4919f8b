"""The benchmarks' naive sides compute what ours computes (so their speed-ups compare like
with like), on the benchmarks' own synthetic inputs at a small size."""

from __future__ import annotations

import polars as pl
import pytest
import torch

from benchmarks.bench_metrics import naive, ours, tables
from benchmarks.naive_ranker import naive_rerank, naive_scores, naive_train
from pipeline.rerank import rerank
from tests.unit.tiny_rankers import ARCHS, no_dropout, tiny_ranker


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


QUERIES = {"q0": "who is a nurse", "q1": "doctor salary in the city"}
DOCS = {
    f"d{i}": " ".join(["she", "works", "as", "a", "nurse", "and", "he", "is", "a", "doctor"] * i)
    for i in range(1, 7)
}


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_reranking_scores_equal_per_pair_max_len_padding(arch: str) -> None:
    """Our reranking (each distinct text encoded once for the bi-encoder and late
    interaction, length-sorted dynamically padded batches) gives the naive scores (each
    pair's texts encoded for that pair, padded to max_len, candidate order)."""
    ranker = tiny_ranker(arch, max_len=48, q_len=16)
    ranker.bind(QUERIES, DOCS)
    cands = pl.DataFrame(
        {
            "query_id": [q for q in QUERIES for _ in DOCS],
            "doc_id": list(DOCS) * 2,
            "rank": list(range(1, 7)) * 2,
            "score": [0.0] * 12,
        }
    )
    run = rerank(ranker, cands, batch_size=4)
    got = {(q, d): s for q, d, s in run.select("query_id", "doc_id", "score").iter_rows()}
    keys = list(cands.select("query_id", "doc_id").iter_rows())
    expected = naive_rerank(ranker, [(QUERIES[q], DOCS[d]) for q, d in keys], batch_size=5)
    assert [got[k] for k in keys] == pytest.approx(expected, abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_training_loss_and_gradient_equal_the_naive_full_forward(arch: str) -> None:
    """One batch's margin loss and gradients: ours (texts shared by the batch encoded once,
    top layer on the cached bottom, dynamic padding) vs naive (per pair, full forward,
    max_len padding), same weights, dropout off."""
    ranker = no_dropout(tiny_ranker(arch, max_len=96, q_len=16, train_layers=1)).train()
    ranker.bind(QUERIES, DOCS)
    ids = [("q0", "d1", "d5"), ("q1", "d6", "d2"), ("q0", "d1", "d2")]
    grads = []
    for side in ("ours", "naive"):
        ranker.zero_grad()
        qids = [q for q, _, _ in ids] * 2
        dids = [p for _, p, _ in ids] + [n for _, _, n in ids]
        if side == "ours":
            scores = ranker(qids, dids)[0]
        else:
            scores = naive_scores(ranker, [QUERIES[q] for q in qids], [DOCS[d] for d in dids])
        pos, neg = scores.split(len(ids))
        loss = torch.clamp(1 - torch.tanh(pos) + torch.tanh(neg), min=0).mean()
        loss.backward()
        trained = {n: p.grad.clone() for n, p in ranker.named_parameters() if p.grad is not None}
        grads.append((float(loss.detach()), trained))
    (loss_ours, ours_g), (loss_naive, naive_g) = grads
    assert loss_ours == pytest.approx(loss_naive, abs=1e-6)
    assert ours_g.keys() == naive_g.keys() and all(".layer.0." not in n for n in ours_g)
    for name in ours_g:
        torch.testing.assert_close(ours_g[name], naive_g[name], atol=1e-5, rtol=1e-4)


def test_naive_training_moves_the_trainable_weights_only() -> None:
    ranker = tiny_ranker("bi_encoder", train_layers=1)
    frozen = {n: p.clone() for n, p in ranker.named_parameters() if not p.requires_grad}
    losses = naive_train(ranker, [(QUERIES["q0"], DOCS["d1"], DOCS["d2"])] * 4, 2, 1e-2)
    assert len(losses) == 2 and all(v >= 0 for v in losses)
    assert all(torch.equal(p, frozen[n]) for n, p in ranker.named_parameters() if n in frozen)
