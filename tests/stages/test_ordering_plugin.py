"""A new ordering and a new loss are one file each: drop throwaway plug-ins into a copy of the
tiny profile, name them in a new method of params.yaml, regenerate dvc.yaml's code deps
(`python -m pipeline.deps --write`; no file edited by hand), and `dvc repro` runs exactly that
method's stages and the report (issue 34: the deps are the code each stage runs, so no other
method retrains), then trains and evaluates the method on the new ordering.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
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

LOSS = '''"""`double_margin`: twice the margin loss (a throwaway test plug-in)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pipeline.config import NoConfig
from pipeline.train.losses._pairwise import hinge
from pipeline.train.losses.common import Loss

if TYPE_CHECKING:
    from torch import Tensor


def loss(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], cfg: NoConfig) -> Tensor:
    """``2 × mean(max(0, 1 − tanh s⁺ + tanh s⁻))``. Paper: none (a test plug-in)."""
    return 2.0 * hinge(s_pos, s_neg, 0.0, 0.0, 1.0)


RECORD = Loss("double_margin", NoConfig, fn=loss)
'''


def test_a_new_ordering_and_loss_rerun_only_their_method(
    tiny_repo: Path, tmp_path: Path, dvc: Dvc
) -> None:
    repo = tmp_path / "r"
    shutil.copytree(tiny_repo, repo)
    run(["git", "reset", "-q", "--hard", "HEAD"], repo)  # earlier tests ran experiments in it
    dvc(repo, "checkout", "-f", "-q")
    (repo / "pipeline/ordering/by_psi.py").write_text(PLUGIN)
    (repo / "pipeline/train/losses/double_margin.py").write_text(LOSS)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["orderings"]["by_psi"] = {"descending": True}
    params["methods"]["most_biased_first"] = {
        "ordering": "by_psi",
        "loss": {"double_margin": {}},
        "psi": "tf_abs",
    }
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run([sys.executable, "-m", "pipeline.deps", "--write"], repo)

    out = dvc(repo, "repro")
    ran = set(re.findall(r"Running stage '([^']+)'", out.stdout))
    method = {f"{s}@most_biased_first" for s in ("order", "train", "evaluate")}
    # and `params`, which validates params.yaml and writes the code digests (new files: its
    # deps changed); only the new method's digests are new, so it reruns nothing else
    assert ran == method | {"params", "report"}, out.stdout
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
    changed = sorted(line for line in status.stdout.splitlines() if "__pycache__" not in line)
    assert changed == [" M dvc.yaml", "?? pipeline/ordering/by_psi.py",
                       "?? pipeline/train/losses/double_margin.py"], status.stdout  # fmt: skip
    vars_ = yaml.safe_load((repo / "dvc.yaml").read_text())["vars"][0]["method_code"]
    assert vars_["most_biased_first"] == {"ordering": "by_psi"}
    digest = (repo / "data/code/train@most_biased_first.txt").read_text()
    assert "pipeline/train/losses/double_margin.py" in digest
    assert "double_margin" not in (repo / "data/code/train@baseline.txt").read_text()
