"""MS MARCO-like synthetic texts for the ranker benchmarks.

Passage lengths in words follow a log-normal with median 55 (MS MARCO passages: mean ≈ 56
words, long right tail), clipped to 10–220 words; queries have 3–12 words. Words are whole
words of the model's WordPiece vocabulary, so a word is about one token.
"""

from __future__ import annotations

import numpy as np
from transformers import PreTrainedTokenizerBase


def vocabulary(tokenizer: PreTrainedTokenizerBase) -> list[str]:
    return sorted(w for w in tokenizer.get_vocab() if w.isalpha() and w.islower() and len(w) > 2)


def passages(vocab: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(np.log(55), 0.45, n).astype(int), 10, 220)
    return [" ".join(rng.choice(vocab, size=int(k))) for k in lengths]


def queries(vocab: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(vocab, size=int(k))) for k in rng.integers(3, 13, n)]
