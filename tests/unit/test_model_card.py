"""Exported model cards describe their model (pipeline.models.card): method, ordering and loss
with their settings, the data and query counts used, the fold, and what the metrics cover."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import polars as pl
import yaml

from pipeline.models.card import export
from tests.unit.tiny_rankers import tiny_ranker

ROOT = Path(__file__).resolve().parents[2]


def _project(root: Path) -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["dataset"]["grep_biasir"] |= {"folds": 2, "max_queries": 8}
    params["methods"]["penalty_relevant"]["loss"][0]["lambda"] = 0.25
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    (root / "data").mkdir()
    queries = {"query_id": [str(i) for i in range(8)], "fold": [0, 0, 0, 1, 1, 1, 1, 1]}
    pl.DataFrame(queries | {"split": ["test"] * 8}).write_parquet(root / "data/queries.parquet")
    (root / "metrics").mkdir()
    for row, mrr in (("penalty_relevant", 0.5), ("bm25", 0.4)):
        m = {"MRR@10": mrr, "NFaiRR@10": 0.8, "ARaB-tf@10": 0.01, "gap-mean": 0.1,
             "gap-male-wins": 0.6, "n_queries": 8}  # fmt: skip
        (root / "metrics" / f"{row}.json").write_text(json.dumps(m))
    model = tiny_ranker("bi_encoder", train_layers=1).save(
        root / "models" / "penalty_relevant" / "seed-1" / "fold-1"
    )  # the default's train.seeds [1, 2, 3]: the first seed's models are kept
    for f in model.rglob("*"):  # as DVC leaves files it links from its cache: read-only
        if f.is_file():
            os.chmod(f, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def test_exported_card_describes_its_model(tmp_path: Path) -> None:
    _project(tmp_path)
    out = export("penalty_relevant", 1, tmp_path / "export", root=tmp_path)
    text = (out / "README.md").read_text()
    training = text.split("## Training")[1].split("##")[0]
    assert "ordering: shuffle" in training and "by_query: True" in training
    assert "loss: penalty (docs: relevant, lambda: 0.25, margin: 1.0), psi: bool_abs" in training
    assert "`grep-biasir` (`dataset.grep_biasir.max_queries: 8`)" in training
    assert "fold 1 of 2" in training and "trained on 3 queries, tested on 5" in training
    evaluation = text.split("## Evaluation")[1].split("## Bias")[0]
    assert "pool all 2 fold models over 8 queries" in evaluation
    assert "this model (fold 1) ranked 5 of them" in evaluation
    assert "| penalty_relevant | 0.5000 |" in evaluation and "| bm25 | 0.4000 |" in evaluation
    assert "from 8 queries with binary gender labels" in text
    assert "117" not in text and "default data" not in text
    assert (out / "model.safetensors.index.json").is_file()  # the model came along
