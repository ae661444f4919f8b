"""Building and loading rankers of any model family (SPEC §5.1).

``build_ranker(cfg, seed)`` starts the family ``cfg.arch`` (its record in
``pipeline.models``) from the checkpoint ``model.name`` (the untrained ``zero-shot`` model)
with its own settings ``model.<arch>``; ``load_ranker(dir)`` reads a directory written by
``Ranker.save``.
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import torch
import transformers

from pipeline.config import build
from pipeline.models import MODELS, Family, family_names, get_family
from pipeline.models.base import Ranker, read_meta
from pipeline.models.encoders import load_encoder, resolve_device, truncate_layers
from pipeline.sections import ModelParams


def check_family(family: Family) -> None:
    """The record's ranker class says the same ``arch`` as the record (a family's file)."""
    if family.cls.arch != family.name:
        raise TypeError(
            f"pipeline/models/{family.name}.py: its ranker class has arch = "
            f"{family.cls.arch!r}; make it {family.name!r}"
        )


def build_ranker(cfg: ModelParams, seed: int = 0) -> Ranker:
    """The untrained ranker of family ``cfg.arch`` on checkpoint ``cfg.name`` (seeded head)."""
    fam = get_family(cfg.arch)
    check_family(fam)
    if cfg.arch not in cfg.families:  # built in code: the family's default settings
        cfg = replace(cfg, families={**cfg.families, cfg.arch: fam.config()})
    auto = getattr(transformers, fam.auto_class)
    tokenizer, encoder = load_encoder(cfg.name, seed, auto, **fam.auto_kwargs)
    if cfg.n_layers is not None:
        truncate_layers(encoder, cfg.n_layers)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if fam.make is not None:
            return fam.make(encoder, tokenizer, cfg, seed)
        return fam.cls(encoder, tokenizer, cfg)


def model_params(arch: str, settings: Any = None, **common: Any) -> ModelParams:
    """The ``model`` section of one family: shared keys ``common`` and its own ``settings``
    (a mapping of its ``model.<arch>`` keys, checked as params are; default: its defaults)."""
    family = get_family(arch)
    own = settings if isinstance(settings, family.config) else build(
        family.config, dict(settings or {}), f"model.{arch}"
    )  # fmt: skip
    return ModelParams(arch=arch, families={arch: own}, **common)


def load_ranker(model_dir: str | Path, **overrides: Any) -> Ranker:
    """Read a directory written by :meth:`Ranker.save` (no network); eval mode."""
    path = Path(model_dir)
    meta = read_meta(path)
    config = {**meta["config"], "name": str(path), "n_layers": None, **overrides}
    family = get_family(config.pop("arch"))
    known = {f.name for f in fields(family.config)}
    settings = {k: v for k, v in meta.get("settings", {}).items() if k in known}
    ranker = build_ranker(model_params(family.name, family.config(**settings), **config))
    ranker.base = str(meta.get("base", ranker.base))
    ranker.load_files(path)
    return ranker.eval()


__all__ = [
    "MODELS",
    "Family",
    "Ranker",
    "build_ranker",
    "family_names",
    "get_family",
    "load_ranker",
    "model_params",
    "resolve_device",
]
