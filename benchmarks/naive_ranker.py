"""Cross-encoder training and reranking the way a minimal script does it: tokenise inside the
step, pad every batch to ``max_len``, keep the candidates' order. The naive sides of
``bench_train`` and ``bench_rerank``; ``tests/unit/test_benchmark_references.py`` checks they
compute what ours computes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from pipeline.train.model import CrossEncoder


def encode_padded(
    tokenizer: PreTrainedTokenizerBase, queries: list[str], docs: list[str], max_len: int
) -> dict[str, torch.Tensor]:
    """``[CLS] q [SEP] d [SEP]`` pairs tokenised now, passages truncated, padded to max_len."""
    enc = tokenizer(
        queries,
        docs,
        padding="max_length",
        truncation="only_second",
        max_length=max_len,
        return_tensors="pt",
    )
    return {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids")}


def naive_train(
    model: CrossEncoder,
    tokenizer: PreTrainedTokenizerBase,
    triples: Sequence[tuple[str, str, str]],
    batch_size: int,
    max_len: int,
    lr: float,
) -> list[float]:
    """One pass, margin loss ``mean(max(0, 1 − tanh(s⁺) + tanh(s⁻)))``, AdamW; the losses."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses = []
    for start in range(0, len(triples), batch_size):
        batch = triples[start : start + batch_size]
        queries = [q for q, _, _ in batch] * 2
        docs = [p for _, p, _ in batch] + [n for _, _, n in batch]
        scores = model(**encode_padded(tokenizer, queries, docs, max_len))
        pos, neg = scores.split(len(batch))
        loss = torch.clamp(1.0 - torch.tanh(pos) + torch.tanh(neg), min=0).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


@torch.no_grad()
def naive_rerank(
    model: CrossEncoder,
    tokenizer: PreTrainedTokenizerBase,
    pairs: Sequence[tuple[str, str]],
    batch_size: int,
    max_len: int,
) -> list[float]:
    """Scores of ``(query text, passage text)`` pairs, in order, batches padded to max_len."""
    model.eval()
    scores: list[float] = []
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        inputs = encode_padded(tokenizer, [q for q, _ in batch], [d for _, d in batch], max_len)
        scores.extend(model(**inputs).tolist())
    return scores
