"""The features stage's states do not depend on how many processes compute them
(pipeline.models.features.compute_features), and equal the ranker's own `warm`."""

from __future__ import annotations

from pathlib import Path

import torch

from pipeline.models.features import compute_features, save_features
from pipeline.models.registry import build_ranker
from pipeline.train.jobs import run_jobs
from tests.unit.tiny_rankers import DOCS, QUERIES, tiny_config

# 150 texts of different lengths: three length-sorted batches of 64
DOCS_MANY = {f"{k}-{i}": " ".join([v] * (1 + i % 4)) for i in range(18) for k, v in DOCS.items()}


def _texts() -> tuple[dict[str, str], dict[str, str]]:
    """Fresh tables: a ranker caches states per table (pipeline.models.base, `bind`)."""
    return dict(QUERIES), dict(DOCS_MANY)


def test_two_processes_give_the_states_of_one(tmp_path: Path) -> None:
    cfg = tiny_config("bi_encoder", train_layers=1)
    one = compute_features(cfg, 3, _texts(), workers=1)
    two = compute_features(cfg, 3, _texts(), workers=2, runner=run_jobs)
    ranker = build_ranker(cfg, 3)
    ranker.bind(*_texts())
    ranker.warm(list(QUERIES), list(DOCS_MANY))
    plain = ranker.features()
    assert len(one) == len(QUERIES) + len(DOCS_MANY)
    assert list(one) == list(two) == list(plain)  # the same keys in the same order
    assert all(torch.equal(one[k], two[k]) and torch.equal(one[k], plain[k]) for k in one)
    save_features(one, tmp_path / "one.safetensors")
    save_features(two, tmp_path / "two.safetensors")
    assert (tmp_path / "one.safetensors").read_bytes() == (
        tmp_path / "two.safetensors"
    ).read_bytes()


def test_a_pair_family_has_no_states() -> None:
    assert compute_features(tiny_config("cross_encoder", train_layers=1), 0, _texts(), 2) == {}
