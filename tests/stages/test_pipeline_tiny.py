"""End to end on the tiny profile: outputs, caching granularity, and stage errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from tests.stages.conftest import ROOT, make_repo

pytestmark = pytest.mark.slow
Dvc = Callable[..., subprocess.CompletedProcess[str]]


def _ran(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def test_repro_writes_every_artifact(tiny_repo: Path) -> None:
    for m in ("baseline", "penalty_irrelevant"):
        metrics = json.loads((tiny_repo / f"metrics/{m}.json").read_text())
        assert 0.0 <= metrics["MRR@10"] <= 1.0
        assert 0.0 <= metrics["NFaiRR@10"] <= 1.0
        run = pl.read_parquet(tiny_repo / f"runs/{m}.parquet")
        assert run["query_id"].n_unique() >= 3
        assert (tiny_repo / f"plots/train/{m}.csv").read_text().startswith("step,loss,lr")
    summary = (tiny_repo / "metrics/summary.md").read_text()
    assert "| baseline |" in summary and "| penalty_irrelevant |" in summary


def test_lambda_change_reruns_only_that_method(tiny_repo: Path, dvc: Dvc) -> None:
    before = (tiny_repo / "metrics/penalty_irrelevant.json").read_text()
    out = dvc(tiny_repo, "exp", "run", "-S", "methods.penalty_irrelevant.lambda=2")
    assert (tiny_repo / "metrics/penalty_irrelevant.json").read_text() != before
    assert _ran(out.stdout) == {
        "train@penalty_irrelevant",
        "rerank@penalty_irrelevant",
        "evaluate@penalty_irrelevant",
        "report",
    }, out.stdout


def test_sigma_change_reruns_only_curriculum_stages(tiny_repo: Path, dvc: Dvc) -> None:
    out = dvc(tiny_repo, "exp", "run", "-S", "curriculum.sigma=0.25")
    ran = _ran(out.stdout)
    assert "order_curriculum@curriculum_low_high" in ran, out.stdout
    allowed = {
        "order_curriculum@curriculum_low_high",
        "train@curriculum_low_high",
        "rerank@curriculum_low_high",
        "evaluate@curriculum_low_high",
        "curriculum_figure",  # the σ figure reads the curriculum section too
        "report",
    }
    assert ran <= allowed, out.stdout


def test_unknown_method_stage_error(tiny_repo: Path, tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shutil.copytree(tiny_repo, repo)
    from tests.stages.conftest import run

    proc = run(["python", "-m", "stages.train", "nope"], repo, check=False)
    assert proc.returncode == 1
    assert (
        "unknown method 'nope'; known (under `methods:` in params.yaml): ['baseline'" in proc.stderr
    )


def test_ill_typed_param_stops_repro(tmp_path: Path, dvc: Dvc) -> None:
    params = tmp_path / "params.yaml"
    text = (ROOT / "tests/data/params_tiny.yaml").read_text()
    params.write_text(text.replace("test_fraction: 0.4", "test_fraction: lots"))
    repo = make_repo(tmp_path / "r", params)
    proc = dvc(repo, "repro", "extract", check=False)
    assert proc.returncode != 0
    assert (
        "params key 'dataset.test_fraction': expected float, got 'lots'"
        in proc.stderr + proc.stdout
    )
    assert not (repo / "data/corpus.parquet").exists()
