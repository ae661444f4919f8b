"""The README's experiment recipes on the tiny profile: DVCLive's training logs where `dvc
metrics`, `dvc exp show` and `dvc plots` look, and a targeted experiment on a fresh clone
that runs only the data stages and the changed method's."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.bench_quick import quick_command
from tests.stages.conftest import ROOT, run

pytestmark = pytest.mark.slow
Dvc = Callable[..., subprocess.CompletedProcess[str]]


def test_dvclive_logs_show_in_dvc_plots_not_in_the_metrics_headline(
    tiny_repo: Path, dvc: Dvc
) -> None:
    """`dvc metrics show` is the evaluation's headline (issue 41); DVCLive's summary is an
    output beside the curves that `dvc plots` draws."""
    metrics = json.loads(dvc(tiny_repo, "metrics", "show", "--json").stdout)
    files = next(iter(metrics.values()))["data"]
    assert not [f for f in files if f.startswith("dvclive/")], list(files)
    live = json.loads((tiny_repo / "dvclive/baseline/metrics.json").read_text())
    assert set(live) >= {"loss", "fold-0", "fold-1", "step"}
    assert live["fold-0"]["loss"] > 0 and live["fold-0"]["lr"] >= 0
    plots = json.loads(dvc(tiny_repo, "plots", "show", "--json").stdout)["data"]
    for name in ("loss", "lr"):  # one plot per fold model and value
        assert f"dvclive/baseline/plots/metrics/fold-1/{name}.tsv" in plots, list(plots)


def test_targeted_experiment_on_a_fresh_clone_runs_only_that_method(
    tiny_repo: Path, tmp_path: Path, dvc: Dvc
) -> None:
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(tiny_repo), str(clone)], tmp_path)  # no outputs, no cache
    out = dvc(clone, "exp", "run", "-S", "methods.penalty_irrelevant.loss.penalty.lambda=0.5",
              "evaluate@penalty_irrelevant")  # fmt: skip
    ran = set(re.findall(r"Running stage '([^']+)'", out.stdout))
    data = {"params", "extract", "score", "candidates", "features", "transfer_data"}
    method = {f"{s}@penalty_irrelevant" for s in ("order", "train", "evaluate")}
    assert ran == data | method, out.stdout


def test_readme_quick_profile_names_real_stages_and_params() -> None:
    """The quick profile's command (timed by benchmarks/bench_quick.py on the real model):
    its targets are stages of dvc.yaml and its -S keys exist in params.yaml."""
    import yaml

    args = quick_command()
    sets = [args[i + 1] for i, a in enumerate(args) if a == "-S"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for item in sets:
        *sections, key = item.split("=")[0].split(".")
        node = params
        for section in sections:
            node = node[section]
        assert key in node, item
    targets = [a for i, a in enumerate(args[3:], 3) if not a.startswith("-")
               and args[i - 1] not in ("-S", "-n")]  # fmt: skip
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert targets and all(t.split("@")[0] in stages for t in targets), targets
    assert all(t.split("@")[1] in params["methods"] for t in targets), targets
