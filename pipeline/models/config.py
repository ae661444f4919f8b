"""The ``model`` section of params.yaml as a typed config (no torch import: params load it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ARCHS = ("cross_encoder", "bi_encoder", "late_interaction")


@dataclass(frozen=True)
class ModelConfig:
    """The ``model`` section of params.yaml (SPEC §5.1); validated where params are loaded."""

    arch: Literal["cross_encoder", "bi_encoder", "late_interaction"] = "cross_encoder"
    name: str = "all-MiniLM-L6-v2"
    n_layers: int | None = None  # keep the first n encoder layers (null = all)
    train_layers: int | None = None  # train only the top k layers (null = all)
    max_len: int = 128
    q_len: int = 32
    similarity: Literal["cosine", "dot"] = "cosine"  # bi_encoder
    temperature: float = 1.0  # bi_encoder / late_interaction: score = similarity / temperature
    dim: int = 128  # late_interaction: projection size of the token embeddings
