"""Nested selection of the training recipe (issue 29) on the tiny profile: the command trains
every grid point on the inner split of each outer fold's training queries and records the
grid's scores and each fold's choice."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

from tests.stages.conftest import run

pytestmark = pytest.mark.slow


def test_select_recipe_scores_the_grid_per_outer_fold(tiny_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "sel"
    grid = ["--grid", "train.lr=1e-3,2e-3", "--grid", "model.bi_encoder.temperature=0.5"]
    run([sys.executable, "-m", "stages.select_recipe", *grid, "--out", str(out)], tiny_repo)
    scores = pl.read_csv(out / "scores.csv")
    choices = pl.read_csv(out / "choices.csv")
    # 2 outer folds x 2 points x one seed (the tiny profile trains one model per method)
    assert scores.height == 4 and set(scores["outer_fold"]) == {0, 1}
    assert set(scores["train.lr"]) == {1e-3, 2e-3} and scores["MRR@10"].is_between(0, 1).all()
    # inner queries: the other outer fold's 4 queries of the tiny profile's 8
    assert set(scores["inner_queries"]) == {4}
    assert choices.height == 2 and set(choices["train.lr"]) <= {1e-3, 2e-3}
    for row in choices.iter_rows(named=True):
        best = scores.filter(pl.col("outer_fold") == row["outer_fold"])["MRR@10"].max()
        assert row["score"] == pytest.approx(best)
        assert row["is_current"] == (row["train.lr"] == 1e-3)  # the tiny profile's lr
    assert {p.name for p in out.iterdir()} == {"scores.csv", "choices.csv"}  # models deleted
