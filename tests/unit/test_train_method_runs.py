"""The runs each training job makes with its saved model equal reranking the saved models
afterwards (what the train stage did before reranking moved into the jobs)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.errors import InputError
from pipeline.models.registry import load_ranker
from pipeline.params import parse_params
from pipeline.rerank import rerank_folds
from pipeline.train.method import train_method
from tests.stages.conftest import tiny_params
from tests.unit.tiny_rankers import CANDIDATES, DOC_SCORES, DOCS, QUERIES, TRIPLES

ROOT = Path(__file__).resolve().parents[2]
FOLD = {"q0": 0, "q1": 0, "q2": 1, "q3": 1}


def _params(fold_models: str):  # type: ignore[no-untyped-def]
    raw = yaml.safe_load(tiny_params(ROOT / "tests" / "data" / "params_tiny.yaml"))
    raw["train"] |= {"seeds": [1, 2], "max_steps": 2, "batch_size": 2, "group_size": 3}
    raw["transfer"]["fold_models"] = fold_models
    return parse_params(raw)


def _ordered() -> pl.DataFrame:
    """The tiny triples, each query in its fold, once per seed (fold k trains on the other)."""
    parts = []
    for seed in (1, 2):
        for fold in (0, 1):
            rows = TRIPLES.filter(pl.col("query_id").replace_strict(FOLD) != fold)
            parts.append(rows.with_columns(pl.lit(fold).alias("fold"), pl.lit(seed).alias("seed"),
                                           pl.int_range(pl.len()).alias("position")))  # fmt: skip
    return pl.concat(parts)


@pytest.mark.parametrize("fold_models", ["first", "all"])
def test_job_runs_equal_reranking_the_saved_models(tmp_path: Path, fold_models: str) -> None:
    params = _params(fold_models)
    cands = CANDIDATES.with_columns(pl.col("query_id").replace_strict(FOLD).alias("fold"))
    transfer = CANDIDATES
    done = train_method(params, "baseline", _ordered(), (QUERIES, DOCS), DOC_SCORES, tmp_path,
                        None, None, cands, transfer)  # fmt: skip
    assert [(r.seed, r.sub) for r in done.runs] == [(1, "seed-1"), (2, "seed-2")]
    for r in done.runs:
        folder = tmp_path / r.sub
        run, moved = rerank_folds(lambda fold, d=folder: load_ranker(d / f"fold-{fold}"),
                                  cands, (QUERIES, DOCS), params.rerank.batch_size, None,
                                  transfer, fold_models)  # fmt: skip
        assert r.run.equals(run) and r.transfer is not None and moved is not None
        assert r.transfer.equals(moved)
        assert set(r.transfer["fold"]) == ({0} if fold_models == "first" else {0, 1})
        assert set(r.run["query_id"]) == set(FOLD)
    assert {"model load", "training steps", "save", "reload", "rerank"} <= set(done.seconds)
    assert all(v >= 0 for v in done.seconds.values())


def test_a_test_fold_without_training_triples_is_named(tmp_path: Path) -> None:
    cands = CANDIDATES.with_columns(pl.col("query_id").replace_strict(FOLD).alias("fold"))
    cands = pl.concat([cands, cands.head(1).with_columns(pl.lit(5, pl.Int64).alias("fold"))])
    with pytest.raises(InputError, match=r"fold\(s\) \[5\].*no training triples"):
        train_method(_params("first"), "baseline", _ordered(), (QUERIES, DOCS), DOC_SCORES,
                     tmp_path, None, None, cands, None)  # fmt: skip
