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
        run = pl.read_parquet(tiny_repo / f"runs/{m}/run.parquet")
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


def _head_copy(tiny_repo: Path, dest: Path, dvc: Dvc) -> Path:
    """A copy of the tiny repository with its workspace back at HEAD (earlier tests ran
    experiments in it)."""
    shutil.copytree(tiny_repo, dest)
    from tests.stages.conftest import run

    run(["git", "reset", "-q", "--hard", "HEAD"], dest)
    dvc(dest, "checkout", "-f", "-q")
    return dest


def test_seeds_train_each_method_per_seed(tiny_repo: Path, tmp_path: Path, dvc: Dvc) -> None:
    repo = _head_copy(tiny_repo, tmp_path / "r", dvc)
    out = dvc(repo, "exp", "run", "-S", "train.seeds=[1,2]")
    ran = _ran(out.stdout)
    assert "train@baseline" in ran and not {"extract", "score", "candidates"} & ran, out.stdout
    assert not any(stage.startswith("order") for stage in ran), out.stdout
    for m in ("baseline", "penalty_irrelevant"):
        seeds = {}
        for seed in (1, 2):
            assert (repo / f"models/{m}/seed-{seed}/cross_encoder.safetensors").is_file()
            assert (repo / f"runs/{m}/seed-{seed}/run.trec").is_file()
            seeds[seed] = json.loads((repo / f"eval/{m}/seed-{seed}/metrics.json").read_text())
        metrics = json.loads((repo / f"metrics/{m}.json").read_text())
        assert metrics["seeds"] == [1, 2]
        for key in ("MRR@10", "NFaiRR@10"):
            values = [seeds[1][key], seeds[2][key]]
            assert metrics[key] == pytest.approx(sum(values) / 2)
            assert metrics["std"][key] == pytest.approx(abs(values[0] - values[1]) / 2**0.5)
    models = [(repo / f"models/baseline/seed-{s}/cross_encoder.safetensors") for s in (1, 2)]
    assert models[0].read_bytes() != models[1].read_bytes()
    summary = (repo / "metrics/summary.md").read_text()
    assert "±" in summary and "mean ± std over its seeds" in summary, summary


def test_metrics_diff_between_two_experiments(tiny_repo: Path, tmp_path: Path, dvc: Dvc) -> None:
    repo = _head_copy(tiny_repo, tmp_path / "r", dvc)
    for name, lam in (("lam-a", "0.001"), ("lam-b", "2")):
        dvc(repo, "exp", "run", "-n", name, "-S", f"methods.penalty_irrelevant.lambda={lam}")
    changed = json.loads(dvc(repo, "metrics", "diff", "lam-a", "lam-b", "--json").stdout)
    assert set(changed) == {"metrics/penalty_irrelevant.json"}, changed  # the others: same
    full = json.loads(dvc(repo, "metrics", "diff", "lam-a", "lam-b", "--all", "--json").stdout)
    flat = full["metrics/penalty_irrelevant.json"]
    assert {"MRR@10", "ARaB-tf-abs@10", "NFaiRR@10", "nDCG@10"} <= set(flat), flat
    for key, row in changed["metrics/penalty_irrelevant.json"].items():
        assert row["diff"] == pytest.approx(row["new"] - row["old"]), key
    assert full["metrics/baseline.json"]["MRR@10"]["diff"] == 0
    table = dvc(repo, "metrics", "diff", "lam-a", "lam-b", "--all", "--md").stdout
    assert re.search(r"\| metrics/penalty_irrelevant\.json +\| MRR@10 +\| [0-9.]+ +\|", table), (
        table
    )
