"""A fold split per seed (issue 29, `dataset.grep_biasir.splits`), end to end on the tiny
profile: each seed trains, reranks and is evaluated on its own k-fold assignment, and every
query is still tested once per seed by a model that never trained on it."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from tests.stages.conftest import run

pytestmark = pytest.mark.slow
Dvc = Callable[..., subprocess.CompletedProcess[str]]


def test_each_seed_uses_its_own_fold_split(tiny_repo: Path, tmp_path: Path, dvc: Dvc) -> None:
    repo = tmp_path / "r"
    shutil.copytree(tiny_repo, repo)
    run(["git", "reset", "-q", "--hard", "HEAD"], repo)
    dvc(repo, "checkout", "-f", "-q")
    dvc(repo, "exp", "run", "-S", "train.seeds=[1,2]", "-S", "dataset.grep_biasir.splits=2",
        "-S", "train.keep_models=all", "evaluate@baseline")  # fmt: skip
    folds = pl.read_parquet(repo / "data/folds.parquet")
    fold_of = {(a, q): f for q, a, f in folds.iter_rows()}
    queries = set(folds["query_id"])
    ordered = pl.read_parquet(repo / "data/order/baseline.parquet")
    assert set(ordered.filter(pl.col("seed") == 1)["fold"]) == {0, 1}
    assert set(ordered.filter(pl.col("seed") == 2)["fold"]) == {2, 3}  # assignment 1
    assert any(fold_of[(0, q)] % 2 != fold_of[(1, q)] % 2 for q in queries)  # another split
    for seed, a in ((1, 0), (2, 1)):
        trained = ordered.filter(pl.col("seed") == seed)
        for fold in (2 * a, 2 * a + 1):
            assert (repo / f"models/baseline/seed-{seed}/fold-{fold}/ranker.json").is_file()
            seen = set(trained.filter(pl.col("fold") == fold)["query_id"])
            tested = {q for q in queries if fold_of[(a, q)] == fold}
            assert tested and not seen & tested  # tested by a model that never saw it
        ran = pl.read_parquet(repo / f"runs/baseline/seed-{seed}/run.parquet")
        assert set(ran["query_id"]) == queries
        cands = pl.read_parquet(repo / "data/candidates.parquet").filter(
            pl.col("assignment") == a
        )  # its lists: the run reranks exactly its assignment's candidates
        assert ran.select("query_id", "doc_id").sort(pl.all()).equals(
            cands.select("query_id", "doc_id").sort(pl.all())
        )
        per_query = pl.read_parquet(repo / f"eval/baseline/seed-{seed}/per_query.parquet")
        assert set(per_query["query_id"]) == queries and per_query["NFaiRR@10"].max() <= 1.0
        judged = pl.read_parquet(repo / f"eval/baseline/seed-{seed}/judged/per_query.parquet")
        assert set(judged["query_id"]) <= queries and judged["NFaiRR@10"].max() <= 1.0
    metrics = json.loads((repo / "eval/baseline/metrics.json").read_text())  # every key
    assert metrics["seeds"] == [1, 2] and 0 <= metrics["judged.NFaiRR@10"] <= 1  # scope keys
    assert "transfer.MRR@10" in metrics  # every fold model of both seeds reranked it
    words = pl.read_parquet(repo / "data/transfer/group_words.parquet")
    assert set(words["group"]) == {"F", "M"}
