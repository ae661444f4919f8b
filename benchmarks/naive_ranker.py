"""Rankers the way a minimal script runs them: every (query, document) pair encoded for
itself (a bi-encoder re-encodes a document for every query it is a candidate of), texts
tokenised inside the step and padded to ``max_len``, the whole encoder run every step (a
frozen bottom is recomputed, not cached). The naive sides of ``bench_train`` and
``bench_rerank``; ``tests/unit/test_benchmark_references.py`` checks they compute what ours
computes. They read the weights of one of our rankers, so both sides score with one model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from pipeline.models.base import Ranker
from pipeline.models.bi_encoder import mean_pool
from pipeline.models.late_interaction import maxsim


def encode_padded(
    ranker: Ranker, texts: list[str], max_len: int, pairs: list[str] | None = None
) -> dict[str, Tensor]:
    """Texts (or ``[CLS] text [SEP] pair [SEP]``) tokenised now, truncated, padded to max_len."""
    enc = ranker.tokenizer(
        texts,
        pairs,
        padding="max_length",
        truncation="only_second" if pairs is not None else True,
        max_length=max_len,
        return_tensors="pt",
    )
    device = ranker.device()
    return {k: enc[k].to(device) for k in ("input_ids", "attention_mask", "token_type_ids")}


def _hidden(ranker: Ranker, inputs: dict[str, Tensor]) -> Tensor:
    base: Any = ranker.encoder.base_model
    out: Tensor = base(**inputs).last_hidden_state
    return out


def naive_scores(ranker: Ranker, queries: list[str], docs: list[str]) -> Tensor:
    """Scores ``[n]`` of the text pairs ``(queries[i], docs[i])``: each pair's texts encoded
    for that pair, padded to the ranker's lengths (gradients flow as in training)."""
    cfg, family = ranker.cfg, ranker.arch
    model: Any = ranker  # the family's own parts: the cross-encoder's head, ColBERT's projection
    if family == "cross_encoder":
        return model.head(_hidden(ranker, encode_padded(ranker, queries, cfg.max_len, docs)))
    q_in = encode_padded(ranker, queries, cfg.q_len)
    d_in = encode_padded(ranker, docs, cfg.max_len)
    hq, hd = _hidden(ranker, q_in).float(), _hidden(ranker, d_in).float()
    mq, md = q_in["attention_mask"], d_in["attention_mask"]
    if family == "bi_encoder":
        eq, ed = mean_pool(hq, mq), mean_pool(hd, md)
        if ranker.settings.similarity == "cosine":
            eq, ed = nn.functional.normalize(eq, dim=-1), nn.functional.normalize(ed, dim=-1)
        return (eq * ed).sum(-1) / ranker.settings.temperature
    if family == "late_interaction":
        tq = nn.functional.normalize(model.projection(hq), dim=-1) * mq.unsqueeze(-1)
        td = nn.functional.normalize(model.projection(hd), dim=-1) * md.unsqueeze(-1)
        return maxsim(tq, mq, td, md) / ranker.settings.temperature
    raise TypeError(f"no naive scoring for {type(ranker).__name__}")


def sequences_per_pair(ranker: Ranker) -> int:
    """Encoder sequences the naive side runs per (query, document) pair."""
    return 1 if ranker.arch == "cross_encoder" else 2


def naive_train(
    ranker: Ranker, triples: Sequence[tuple[str, str, str]], batch_size: int, lr: float
) -> list[float]:
    """One pass over text triples in batches of ``batch_size`` triples, margin loss
    ``mean(max(0, 1 − tanh(s⁺) + tanh(s⁻)))``, AdamW on the trainable parameters; the losses.
    """
    params = [p for p in ranker.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    ranker.train()
    losses = []
    for start in range(0, len(triples), batch_size):
        batch = triples[start : start + batch_size]
        queries = [q for q, _, _ in batch] * 2
        docs = [p for _, p, _ in batch] + [n for _, _, n in batch]
        pos, neg = naive_scores(ranker, queries, docs).split(len(batch))
        loss = torch.clamp(1.0 - torch.tanh(pos) + torch.tanh(neg), min=0).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


@torch.no_grad()
def naive_rerank(ranker: Ranker, pairs: Sequence[tuple[str, str]], batch_size: int) -> list[float]:
    """Scores of ``(query text, passage text)`` pairs, in candidate order, per-pair encoding."""
    ranker.eval()
    scores: list[float] = []
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        scores.extend(naive_scores(ranker, [q for q, _ in batch], [d for _, d in batch]).tolist())
    return scores
