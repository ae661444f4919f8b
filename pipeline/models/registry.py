"""The model-family registry: one record per ``model.arch`` (SPEC §5.1), one file each.

Every public module of ``pipeline.models`` other than the helpers
(``pipeline.models.config.HELPERS``) is a family named after its key and defines
``RECORD = Family(...)`` (:class:`~pipeline.models.base.Family`); the registry is collected
from those records, so a new family is one file. ``build_ranker(cfg, seed)`` starts a family
from the checkpoint ``model.name`` (the untrained ``zero-shot`` model); ``load_ranker(dir)``
reads a directory written by ``Ranker.save``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from pipeline.config import collect, lookup
from pipeline.models.base import Family, ModelConfig, Ranker, read_meta
from pipeline.models.config import HELPERS
from pipeline.models.encoders import load_encoder, resolve_device, truncate_layers


def _collect() -> dict[str, Family]:
    folder = [str(Path(__file__).parent)]
    records = collect("pipeline.models", folder, HELPERS, Family, "model family")
    for module, record in records:
        if record.name != module or record.cls.arch != module:
            raise TypeError(
                f"pipeline/models/{module}.py: RECORD must be named {module!r}, for a Ranker "
                f"subclass with arch = {module!r}"
            )
    return {r.name: r for _, r in records}


MODELS: dict[str, Family] = _collect()
"""Every model family's record, by ``model.arch``."""


def get_family(arch: str) -> Family:
    return lookup(MODELS, arch, "model.arch")


def build_ranker(cfg: ModelConfig, seed: int = 0) -> Ranker:
    """The untrained ranker of family ``cfg.arch`` on checkpoint ``cfg.name`` (seeded head)."""
    fam = get_family(cfg.arch)
    tokenizer, encoder = load_encoder(cfg.name, seed, fam.auto_class, **fam.auto_kwargs)
    if cfg.n_layers is not None:
        truncate_layers(encoder, cfg.n_layers)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return fam.build(encoder, tokenizer, cfg, seed)


def load_ranker(model_dir: str | Path, **overrides: Any) -> Ranker:
    """Read a directory written by :meth:`Ranker.save` (no network); eval mode."""
    path = Path(model_dir)
    meta = read_meta(path)
    cfg = replace(ModelConfig(**meta["config"]), name=str(path), n_layers=None, **overrides)
    ranker = build_ranker(cfg)
    ranker.base = str(meta.get("base", ranker.base))
    ranker.load_files(path)
    return ranker.eval()


__all__ = [
    "MODELS",
    "Family",
    "ModelConfig",
    "Ranker",
    "build_ranker",
    "get_family",
    "load_ranker",
    "resolve_device",
]
