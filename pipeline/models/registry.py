"""The model-family registry: one record per ``model.arch`` (SPEC §5.1), one file each.

``build_ranker(cfg, seed)`` starts a family from the checkpoint ``model.name`` (the untrained
``zero-shot`` model); ``load_ranker(dir)`` reads a directory written by ``Ranker.save``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from transformers import AutoModel, AutoModelForSequenceClassification

from pipeline.config import lookup
from pipeline.models.base import ModelConfig, Ranker, read_meta
from pipeline.models.bi_encoder import BiEncoder
from pipeline.models.cross_encoder import CrossEncoder
from pipeline.models.encoders import load_encoder, resolve_device, truncate_layers
from pipeline.models.late_interaction import PROJECTION_FILE, LateInteraction


@dataclass(frozen=True)
class Family:
    """A model family: its class, the transformers auto class of its encoder, its paper."""

    cls: type[Ranker]
    auto_class: Any
    make: Callable[..., Ranker]
    doc: str


def _plain(cls: type[Ranker]) -> Callable[..., Ranker]:
    return lambda encoder, tokenizer, cfg, seed: cls(encoder, tokenizer, cfg)


MODELS: dict[str, Family] = {
    "cross_encoder": Family(CrossEncoder, AutoModelForSequenceClassification,
                            _plain(CrossEncoder), "monoBERT-style cross-encoder"),
    "bi_encoder": Family(BiEncoder, AutoModel, _plain(BiEncoder), "DPR-style bi-encoder"),
    "late_interaction": Family(LateInteraction, AutoModel, LateInteraction,
                               "ColBERT late interaction"),
}  # fmt: skip


def get_family(arch: str) -> Family:
    return lookup(MODELS, arch, "model.arch")


def build_ranker(cfg: ModelConfig, seed: int = 0) -> Ranker:
    """The untrained ranker of family ``cfg.arch`` on checkpoint ``cfg.name`` (seeded head)."""
    fam = get_family(cfg.arch)
    kwargs = {"num_labels": 1} if fam.auto_class is AutoModelForSequenceClassification else {}
    tokenizer, encoder = load_encoder(cfg.name, seed, fam.auto_class, **kwargs)
    if cfg.n_layers is not None:
        truncate_layers(encoder, cfg.n_layers)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return fam.make(encoder, tokenizer, cfg, seed)


def load_ranker(model_dir: str | Path, **overrides: Any) -> Ranker:
    """Read a directory written by :meth:`Ranker.save` (no network); eval mode."""
    path = Path(model_dir)
    meta = read_meta(path)
    cfg = replace(ModelConfig(**meta["config"]), name=str(path), n_layers=None, **overrides)
    ranker = build_ranker(cfg)
    ranker.base = str(meta.get("base", ranker.base))
    if isinstance(ranker, LateInteraction):
        ranker.projection.weight.data.copy_(load_file(str(path / PROJECTION_FILE))["weight"])
    return ranker.eval()


__all__ = [
    "MODELS",
    "ModelConfig",
    "Ranker",
    "build_ranker",
    "get_family",
    "load_ranker",
    "resolve_device",
]
