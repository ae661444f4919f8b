"""A new ordering is one file: drop a throwaway plug-in into a copy of the tiny profile, name
it in params.yaml, and `dvc repro` trains and evaluates a method on it (no other file edited).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
import yaml

from tests.stages.conftest import run

pytestmark = pytest.mark.slow
Dvc = Callable[..., subprocess.CompletedProcess[str]]

PLUGIN = '''"""`by_psi`: most biased positives first (a throwaway test plug-in)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipeline.ordering.common import Inputs, Ordering, numbered, with_positive_psi


@dataclass(frozen=True)
class ByPsiConfig:
    descending: bool = False


def by_psi(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, cfg: ByPsiConfig, inp: Inputs
) -> pl.DataFrame:
    """Triples sorted by Ψ⁺ (ties by ids).

    Paper: none (tests/stages/test_ordering_plugin.py).
    Inputs: triples, ``doc_scores``; ``orderings.by_psi.descending``; ``inp.psi``.
    """
    scored = with_positive_psi(triples, doc_scores, inp.psi)
    keys = ["psi", "pos_doc_id", "neg_doc_id"]
    return numbered(scored.sort(keys, descending=[cfg.descending, False, False]))


RECORD = Ordering("by_psi", by_psi, ByPsiConfig)
'''


def test_a_new_ordering_is_one_file_and_params(tiny_repo: Path, tmp_path: Path, dvc: Dvc) -> None:
    repo = tmp_path / "r"
    shutil.copytree(tiny_repo, repo)
    run(["git", "reset", "-q", "--hard", "HEAD"], repo)  # earlier tests ran experiments in it
    dvc(repo, "checkout", "-f", "-q")
    (repo / "pipeline/ordering/by_psi.py").write_text(PLUGIN)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["orderings"]["by_psi"] = {"descending": True}
    params["methods"]["most_biased_first"] = {
        "ordering": "by_psi",
        "loss": ["margin"],
        "psi": "tf_abs",
    }
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    out = dvc(repo, "repro")
    ran = set(re.findall(r"Running stage '([^']+)'", out.stdout))
    assert {"order@most_biased_first", "train@most_biased_first"} <= ran, out.stdout
    assert not {"train@baseline", "extract", "score"} & ran, out.stdout  # orders unchanged
    ordered = pl.read_parquet(repo / "data/order/most_biased_first.parquet")
    folds = ordered.partition_by("fold") if "fold" in ordered.columns else [ordered]
    for part in folds:  # with folds, the ordering ran once per fold
        assert part["position"].to_list() == list(range(part.height))
        assert part["psi"].to_list() == sorted(part["psi"].to_list(), reverse=True)
    assert json.loads((repo / "metrics/most_biased_first.json").read_text())["MRR@10"] >= 0.0
    profile = pl.read_csv(repo / "plots/order/most_biased_first.csv")
    assert profile["spearman"][0] < -0.5  # most biased first: Ψ⁺ falls through training
    status = run(
        ["git", "status", "--porcelain", "-uall", "--", "pipeline", "stages", "dvc.yaml"], repo
    )
    changed = [line for line in status.stdout.splitlines() if "__pycache__" not in line]
    assert changed == ["?? pipeline/ordering/by_psi.py"], status.stdout
