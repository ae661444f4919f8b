"""Shared inputs of the ranker tests: tiny random rankers of every family and their texts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import polars as pl
import torch
from torch import nn

from pipeline.models import family_names
from pipeline.models.base import Ranker
from pipeline.models.registry import build_ranker, model_params
from pipeline.sections import COMMON_MODEL_KEYS, ModelParams

TINY = "tiny-random-bert"
ARCHS = tuple(family_names())

QUERIES = {
    "q0": "who is a nurse",
    "q1": "doctor salary in the city",
    "q2": "career advice for women",
    "q3": "how to fix a car",
}
DOCS = {
    "d0": "she works as a nurse in the hospital",
    "d1": "he is a doctor and earns a good salary",
    "d2": "the team works well together",
    "d3": "women in engineering careers " * 3,
    "d4": "a mechanic fixes the car engine",
    "d5": "the weather is nice today",
    "d6": "his father was a famous surgeon " * 2,
    "d7": "nurses and doctors work long hours",
}
# each (query, positive) has two negatives: with group_size 3 one group per (query, positive)
TRIPLES = pl.DataFrame(
    {
        "query_id": ["q0", "q0", "q1", "q1", "q2", "q2", "q3", "q3"],
        "pos_doc_id": ["d0", "d0", "d1", "d1", "d3", "d3", "d4", "d4"],
        "neg_doc_id": ["d2", "d5", "d6", "d7", "d5", "d6", "d2", "d7"],
    }
)
DOC_SCORES = pl.DataFrame(
    {
        "doc_id": list(DOCS),
        "psi_bool": [1.0, -1.0, 0.0, 1.0, 0.0, 0.0, -1.0, 1.0],
        "psi_tf": [0.7, -0.4, 0.0, 1.1, 0.0, 0.0, -0.9, 0.2],
        "psi_tc": [1.0, -1.0, 0.0, 3.0, 0.0, 0.0, -2.0, 1.0],
        "neutrality": [0.2, 0.5, 1.0, 0.0, 1.0, 1.0, 0.3, 0.8],
    }
)

GROUPS = pl.DataFrame(
    {"doc_id": list(DOCS), "group": ["F", "M", "N", "F", "N", "N", "M", "N"]}
)
"""The documents' F/M/N versions (the corpus's `group` column): `version_*` of a batch."""


def candidates(per_query: Mapping[str, list[str]]) -> pl.DataFrame:
    """First-stage candidates (rank = list position, score descending) of ``per_query``."""
    rows = [(q, d, r + 1, float(-r)) for q, ds in per_query.items() for r, d in enumerate(ds)]
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "rank", "score"], orient="row")


# every query's candidates overlap with other queries' (each document is shared)
CANDIDATES = candidates(
    {
        "q0": ["d0", "d7", "d1", "d2"],
        "q1": ["d1", "d6", "d7", "d0"],
        "q2": ["d3", "d0", "d5"],
        "q3": ["d4", "d2", "d5", "d7"],
    }
)


def tiny_config(arch: str = "cross_encoder", **overrides: Any) -> ModelParams:
    """A tiny-random-bert config of ``arch`` (max_len 32, q_len 8, full fine-tuning; its own
    settings: projection dim 16, temperature 1, where the family has them); ``overrides``:
    shared keys or the family's own."""
    common: dict[str, Any] = {"name": TINY, "max_len": 32, "q_len": 8, "train_layers": None}
    own: dict[str, Any] = {"dim": 16, "temperature": 1.0}
    for key, value in overrides.items():
        (common if key in COMMON_MODEL_KEYS else own)[key] = value
    known = set(fields_of(arch))
    return model_params(arch, {k: v for k, v in own.items() if k in known}, **common)


def fields_of(arch: str) -> list[str]:
    """The keys of family ``arch``'s own settings (``model.<arch>``)."""
    from pipeline.config import fields
    from pipeline.models import get_family

    return list(fields(get_family(arch).config))


M = TypeVar("M", bound=nn.Module)


def no_dropout(model: M) -> M:
    """``model`` with every dropout probability set to 0 (train mode becomes deterministic)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


def tiny_ranker(
    arch: str = "cross_encoder", seed: int = 0, dropout: bool = True, **overrides: Any
) -> Ranker:
    """An untrained tiny ranker of ``arch``, bound to :data:`QUERIES` and :data:`DOCS`."""
    ranker = build_ranker(tiny_config(arch, **overrides), seed)
    ranker.bind(QUERIES, DOCS)
    if not dropout:
        no_dropout(ranker)
    return ranker


def flat(model: nn.Module) -> torch.Tensor:
    """Every tensor of the state dict, flattened into one float64 vector."""
    return torch.cat([t.flatten().double() for t in model.state_dict().values()])
