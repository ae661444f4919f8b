"""Every value params.yaml documents as valid for the Grep-BiasIR source runs the real
`extract` and `candidates` stages on the tiny profile (issue 43: `folds: 1` crashed extract on
the fold column's type), and a value the data cannot take is refused by the `params` stage,
which DVC runs before any stage that removes an output.

The tiny profile (tests/data/params_tiny.yaml) keeps the first 8 query ids, all of category
Appearance; each Grep-BiasIR query has 6 documents (a relevant and a non-relevant one, each in
F/M/N versions: 3 × 3 = 9 same-query triples per training query); `candidates.top_k` is 10.
The expected counts below follow from those numbers by hand.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline import io, paths, schemas
from pipeline.params import ParamsError
from stages import candidates, extract
from stages import params as params_stage
from tests.stages.conftest import ROOT, run, tiny_params

QUERIES = 8  # max_queries of the tiny profile: query ids 0..7, one category
DOCS = 6  # documents per query
SAME = 9  # same-query triples per training query (3 relevant × 3 non-relevant versions)
TOP_K = 10


def _params(tmp_path: Path, grep: dict[str, Any], candidates_: dict[str, Any] | None = None) -> str:
    """The tiny profile with ``dataset.grep_biasir`` (and ``candidates``) values changed,
    written as ``tmp_path/params.yaml``; the working directory is ``tmp_path``."""
    raw = yaml.safe_load(tiny_params(ROOT / "tests" / "data" / "params_tiny.yaml"))
    raw["dataset"]["grep_biasir"].update(grep)
    raw["candidates"].update(candidates_ or {})
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> dict[str, pl.DataFrame]:
    monkeypatch.chdir(tmp_path)
    argv = ["--params", _params(tmp_path, **kw)]
    extract.main(argv)
    candidates.main(argv)
    return {
        "queries": io.read_table(paths.QUERIES, schemas.QUERIES),
        "folds": io.read_table(paths.FOLDS, schemas.FOLDS),
        "triples": io.read_table(paths.TRIPLES, schemas.TRIPLES),
        "candidates": io.read_table(paths.CANDIDATES, schemas.CANDIDATES),
        "train_candidates": io.read_table(paths.TRAIN_CANDIDATES, schemas.CANDIDATES),
    }


def test_one_fold_is_a_single_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``folds: 1``, ``test_fraction: 0.4``: round(8 × 0.4) = 3 test queries (fold 0), 5 train
    queries (fold null) whose 5 × 9 = 45 same-query triples train fold 0's model; the 3 test
    queries' side holds 3 × 6 = 18 documents, so each gets 10 candidates: 30 rows."""
    t = _run(tmp_path, monkeypatch, grep={"folds": 1, "test_fraction": 0.4})
    q = t["queries"]
    assert q["fold"].dtype == pl.Int64
    test = q.filter(pl.col("split") == "test")
    assert test.height == 3 and test["fold"].to_list() == [0, 0, 0]
    assert q.filter(pl.col("split") == "train")["fold"].null_count() == 5
    assert t["folds"].sort("query_id").select("query_id", "fold").equals(
        test.sort("query_id").select("query_id", "fold")
    )
    same = t["triples"].filter(pl.col("source") == "same_query")
    assert same.height == 5 * SAME and set(t["triples"]["fold"]) == {0}
    assert not set(same["query_id"]) & set(test["query_id"])
    assert t["candidates"].height == 3 * TOP_K
    assert set(t["candidates"]["query_id"]) == set(test["query_id"])
    assert set(t["train_candidates"]["query_id"]) <= set(q["query_id"]) - set(test["query_id"])


def test_as_many_folds_as_queries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``folds: 8`` (the most 8 queries allow): one query per fold; fold f's model trains on
    the other 7 queries (7 × 9 = 63 same-query triples, 8 × 63 = 504 in all); each fold's test
    side holds that query's 6 documents, so its list has 6 (< top_k 10): 48 rows."""
    t = _run(tmp_path, monkeypatch, grep={"folds": QUERIES})
    q = t["queries"]
    assert sorted(q["fold"].to_list()) == list(range(QUERIES))
    assert set(q["split"]) == {"test"}
    same = t["triples"].filter(pl.col("source") == "same_query")
    assert same.height == QUERIES * (QUERIES - 1) * SAME
    fold_of = dict(q.select("query_id", "fold").iter_rows())
    assert all(fold_of[qid] != f for qid, f in same.select("query_id", "fold").iter_rows())
    assert t["candidates"].height == QUERIES * DOCS
    per_query = t["candidates"].group_by("query_id").len()
    assert set(per_query["len"]) == {DOCS}


def test_two_fold_assignments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``splits: 2`` with ``folds: 2``: 2 × 8 = 16 rows in folds.parquet, assignment 0 with
    folds {0, 1}, assignment 1 with {2, 3}, 4 queries each; each fold's test side has 24
    documents, so 10 candidates per query and assignment: 2 × 8 × 10 = 160 rows."""
    t = _run(tmp_path, monkeypatch, grep={"folds": 2, "splits": 2})
    folds = t["folds"]
    assert folds.height == 2 * QUERIES
    sizes = folds.group_by("assignment", "fold").len().sort("assignment", "fold")
    assert sizes.rows() == [(0, 0, 4), (0, 1, 4), (1, 2, 4), (1, 3, 4)]
    assert t["candidates"].height == 2 * QUERIES * TOP_K
    assert set(t["triples"]["assignment"]) == {0, 1}


def test_top_k_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``candidates.top_k: 1`` (its least value): one candidate per test query, 8 rows."""
    t = _run(tmp_path, monkeypatch, grep={"folds": 2}, candidates_={"top_k": 1})
    assert t["candidates"].height == QUERIES
    assert set(t["candidates"]["rank"]) == {1}


@pytest.mark.slow
@pytest.mark.parametrize(("folds", "tested"), [(1, 3), (QUERIES, QUERIES)], ids=["one", "most"])
def test_the_documented_extremes_run_to_evaluation(
    tiny_repo: Path, tmp_path: Path, dvc: Callable[..., subprocess.CompletedProcess[str]],
    folds: int, tested: int,
) -> None:  # fmt: skip
    """``folds: 1`` (3 test queries, as above) and ``folds: 8`` (every query tested) train,
    rerank and evaluate through DVC on a copy of the tiny profile."""
    repo = tmp_path / "r"
    shutil.copytree(tiny_repo, repo)
    run(["git", "reset", "-q", "--hard", "HEAD"], repo)
    dvc(repo, "checkout", "-f", "-q")
    dvc(repo, "exp", "run", "-S", f"dataset.grep_biasir.folds={folds}", "evaluate@baseline")
    per_query = pl.read_parquet(repo / "eval/baseline/per_query.parquet")
    assert per_query["query_id"].n_unique() == tested
    metrics = json.loads((repo / "metrics/baseline.json").read_text())
    assert 0 <= metrics["MRR@10"] <= 1


@pytest.mark.parametrize(
    ("grep", "message"),
    [
        ({"folds": 9}, r"'dataset\.grep_biasir\.folds': 9 folds need at least 9 queries, and "
         r"there are 8 \(max_queries 8 of the 117 .*set folds to 1\.\.8, or raise max_queries "
         r"to 9"),
        ({"folds": 500, "max_queries": None}, r"'dataset\.grep_biasir\.folds': 500 folds need "
         r"at least 500 queries, and there are 117 .*set folds to 1\.\.117"),
        ({"folds": 1, "splits": 2}, r"'dataset\.grep_biasir\.splits': 2 fold assignments need "
         r"k-fold cross-validation; set folds to 2 or more"),
        ({"folds": 1, "test_fraction": 0}, r"'dataset\.grep_biasir\.test_fraction': 0 holds out "
         r"no query"),
    ],
    ids=["folds-over-max-queries", "folds-over-collection", "splits-one-fold", "no-test-query"],
)  # fmt: skip
def test_the_params_stage_refuses_what_the_data_cannot_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grep: dict[str, Any], message: str
) -> None:
    """Refused by the `params` stage (before DVC removes any output), in one line naming the
    key, the limit and the fix; nothing is written."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParamsError, match=message) as caught:
        params_stage.main(["--params", _params(tmp_path, grep)])
    assert "\n" not in str(caught.value) and "No stage ran" in str(caught.value)
    assert not (tmp_path / "data").exists()
