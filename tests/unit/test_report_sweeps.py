"""Sweeps from `dvc exp show --json` (a fake document shaped like DVC 3's output): the
library (pipeline/report/sweeps.py) and its command (stages/sweeps.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.report.sweeps import experiments, flat_frame, parse_where, slug, sweep_frame
from stages.sweeps import main


def _state(
    rev: str, name: str | None, lam: float, sigma: Any, buckets: Any, mrr: float
) -> dict[str, Any]:
    """One commit or experiment as `dvc exp show --json` prints it."""
    params = {
        "orderings": {"curriculum": {"sigma": sigma, "n_buckets": buckets}},
        "methods": {
            "baseline": {"ordering": "shuffle", "loss": {"margin": {}}, "psi": "bool_abs"},
            "penalty_irrelevant": {
                "ordering": "shuffle",
                "loss": {"penalty": {"docs": "irrelevant", "lambda": lam}},
            },
        },
    }
    metrics = {
        "metrics/baseline.json": {"data": {"MRR@10": 0.5, "NFaiRR@10": 0.7, "method": "baseline"}},
        "metrics/penalty_irrelevant.json": {"data": {"MRR@10": mrr, "NFaiRR@10": 0.7 + lam / 100}},
        "metrics/broken.json": {"error": {"msg": "unreadable", "type": "JSONDecodeError"}},
    }
    data = {
        "rev": rev,
        "timestamp": "2026-01-01T00:00:00",
        "params": {"params.yaml": {"data": params}},
        "metrics": metrics,
        "deps": {},
        "outs": {},
        "meta": {},
    }
    return {"rev": rev, "name": name, "data": data, "error": None, "experiments": None}


def _range(state: dict[str, Any], executor_state: str | None) -> dict[str, Any]:
    executor = (
        None
        if executor_state is None
        else {"state": executor_state, "name": "dvc-task", "local": {}}
    )
    return {"revs": [state], "executor": executor, "name": state["name"]}


def fake_doc() -> list[dict[str, Any]]:
    head = _state("a" * 40, "main", 1.0, 1.0, 10, 0.45)
    queued = _state("q" * 40, "queued-exp", 5.0, 1.0, 10, 0.0)
    queued["data"]["metrics"] = {}
    failed = _state("f" * 40, "failed-exp", 9.0, 1.0, 10, 0.45)
    failed["error"] = {"msg": "Experiment run failed", "type": ""}
    head["experiments"] = [
        _range(_state("b" * 40, "lam-01", 0.1, 1.0, 10, 0.49), None),
        _range(_state("c" * 40, "lam-2", 2.0, 1.0, 10, 0.40), "success"),
        _range(_state("d" * 40, "sigma-3", 1.0, 3.0, 10, 0.47), None),
        _range(_state("e" * 40, "buckets-all", 1.0, 1.0, "all", 0.46), None),
        _range(_state("g" * 40, "lam-2-again", 2.0, 1.0, 10, 0.42), None),
        _range(queued, "queued"),
        _range(failed, "failed"),
        _range(_state("r" * 40, "running-exp", 7.0, 1.0, 10, 0.1), "running"),
    ]
    workspace = _state("workspace", None, 3.0, 1.0, 10, 0.3)
    return [workspace, head]


def test_experiments_skip_workspace_queued_failed_running_and_errors() -> None:
    exps = experiments(fake_doc())
    assert [e.name for e in exps] == [
        "main",
        "lam-01",
        "lam-2",
        "sigma-3",
        "buckets-all",
        "lam-2-again",
    ]
    assert exps[0].params["methods.penalty_irrelevant.loss.penalty.lambda"] == 1.0
    assert set(exps[0].metrics) == {"baseline", "penalty_irrelevant"}  # broken.json left out
    assert exps[0].metrics["baseline"] == {"MRR@10": 0.5, "NFaiRR@10": 0.7}  # numbers only
    assert len(experiments(fake_doc(), workspace=True)) == 7


def test_lambda_sweep_is_per_method_and_averages_repeats() -> None:
    frame = sweep_frame(experiments(fake_doc()), "methods.*.lambda", ["MRR@10"])
    assert frame["method"].unique().to_list() == ["penalty_irrelevant"]
    assert frame["x"].to_list() == ["0.1", "1", "2"]
    # one sweep: `sigma-3` and `buckets-all` (λ 1) are other sweeps' experiments, left out
    assert frame["MRR@10"].to_list() == pytest.approx([0.49, 0.45, 0.41])
    assert frame["n_experiments"].to_list() == [1, 1, 2]
    flat = flat_frame(experiments(fake_doc()), "methods.*.lambda", ["MRR@10"])
    assert flat.rows() == [("baseline", 0.5)]


def test_shared_param_sweep_with_filter_and_non_numeric_values() -> None:
    exps = experiments(fake_doc())
    sigma = sweep_frame(
        exps,
        "orderings.curriculum.sigma",
        ["MRR@10"],
        where={"methods.penalty_irrelevant.loss.penalty.lambda": 1.0},
    )
    assert sigma.filter(pl.col("method") == "penalty_irrelevant").rows() == [
        ("penalty_irrelevant", "1", 1.0, 0.45, 1),  # not `buckets-all` (another sweep)
        ("penalty_irrelevant", "3", 3.0, 0.47, 1),
    ]
    buckets = sweep_frame(
        exps, "orderings.curriculum.n_buckets", ["MRR@10"], methods=["penalty_irrelevant"]
    )
    assert buckets["x"].to_list() == ["10", "all"] and buckets["x_num"].to_list() == [10.0, None]
    assert slug("methods.*.lambda") == "lambda" and slug("train.lr") == "train_lr"
    assert slug("orderings.curriculum.n_buckets") == "n_buckets"


def test_a_sweep_keeps_one_profile_and_its_own_baseline(caplog: pytest.LogCaptureFixture) -> None:
    """A quick-profile experiment (other params: 40 queries) beside the default's λ sweep:
    neither its swept method's point nor its baseline enter the sweep (issue 41)."""
    doc = fake_doc()
    quick = _state("k" * 40, "quick", 0.1, 1.0, 10, 0.10)
    quick["data"]["params"]["params.yaml"]["data"]["dataset"] = {"max_queries": 40}
    quick["data"]["metrics"]["metrics/baseline.json"]["data"]["MRR@10"] = 0.3
    quick["data"]["metrics"]["metrics/baseline.json"]["data"]["NFaiRR@10"] = 0.6
    doc[1]["experiments"].append(_range(quick, None))
    frame = sweep_frame(experiments(doc), "methods.*.lambda", ["MRR@10"])
    assert frame["MRR@10"].to_list() == pytest.approx([0.49, 0.45, 0.41])  # as without it
    flat = flat_frame(experiments(doc), "methods.*.lambda", ["MRR@10", "NFaiRR@10"])
    assert flat.rows() == [("baseline", 0.5, 0.7)]  # the profile's baseline, not 0.4 / 0.65
    assert "quick" in caplog.text and "dataset.max_queries" in caplog.text


def test_post_lambda_sweep_draws_each_entry_and_the_methods_flat() -> None:
    doc = fake_doc()
    for i, lam in enumerate((0.0, 0.1, 0.3)):
        state = _state(f"{i}" * 40, f"post{lam}", 1.0, 1.0, 10, 0.45)
        data = state["data"]
        data["params"]["params.yaml"]["data"]["post"] = {"shift": {"lambda": lam}}
        data["metrics"]["metrics/shift.json"] = {"data": {"MRR@10": 0.5 - lam / 10}}
        doc[1]["experiments"].append(_range(state, None))
    frame = sweep_frame(experiments(doc), "post.*.lambda", ["MRR@10"])
    assert frame.select("method", "x", "MRR@10").rows() == [
        ("shift", "0", 0.5), ("shift", "0.1", pytest.approx(0.49)),
        ("shift", "0.3", pytest.approx(0.47))]  # fmt: skip
    flat = flat_frame(experiments(doc), "post.*.lambda", ["MRR@10"])
    assert dict(flat.rows()) == {"baseline": 0.5, "penalty_irrelevant": 0.45}
    assert slug("post.*.lambda") == "post_lambda"


def test_where_reads_yaml_values_and_names_a_bad_item() -> None:
    assert parse_where(["orderings.curriculum.n_buckets=all", "train.lr=0.001"]) == {
        "orderings.curriculum.n_buckets": "all",
        "train.lr": 0.001,
    }
    with pytest.raises(ValueError, match=r"--where 'sigma': expected key=value"):
        parse_where(["sigma"])


@pytest.mark.slow
def test_cli_writes_one_csv_and_png_per_swept_param(tmp_path: Path) -> None:
    src = tmp_path / "exps.json"
    src.write_text(json.dumps(fake_doc()))
    out = tmp_path / "sweeps"
    assert main([str(src), "--out-dir", str(out), "--logx"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "lambda.csv", "lambda.png", "n_buckets.csv", "n_buckets.png", "sigma.csv", "sigma.png",
    ]  # fmt: skip
    assert pl.read_csv(out / "lambda.csv").columns[:3] == ["method", "x", "x_num"]
    assert (out / "sigma.png").stat().st_size > 1000


def test_cli_help_and_bad_input(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    assert main([str(bad), "--out-dir", str(tmp_path / "o")]) == 1
    assert main([str(tmp_path / "missing.json")]) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [["--out-dir", "plots/sweeps", "--logx"], ["--param", "methods.*.lambda", "--logx"]],
    ids=["README", "adding-a-method"],
)
def test_the_documented_sweep_commands_draw_the_default_methods(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's and docs/adding-a-method.md's `python -m stages.sweeps exps.json …` on the
    committed default's `dvc exp show --json` (every method of params.yaml) with three λ
    experiments of one method added: one line for that method, the others as references
    (their grey shades once passed 1 beyond 4 unswept methods: exit 1)."""
    import copy
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    show = subprocess.run([sys.executable, "-m", "dvc", "exp", "show", "-n", "0", "--json"],
                          cwd=root, capture_output=True, text=True, check=True)  # fmt: skip
    (workspace,) = json.loads(show.stdout)  # the committed default, as the workspace holds it
    head = copy.deepcopy(workspace)
    head.update(rev="h" * 40, name="main")
    head["data"]["rev"] = head["rev"]
    doc = [workspace, head]
    runs = []
    for i, lam in enumerate((0.05, 0.1, 0.25)):
        state = copy.deepcopy(head)
        state.update(rev=f"{i}" * 40, name=f"lam{lam}", experiments=None)
        data = state["data"]
        data["rev"] = state["rev"]
        params = data["params"]["params.yaml"]["data"]
        params["methods"]["penalty_irrelevant"]["loss"]["penalty"]["lambda"] = lam
        metrics = data["metrics"]["metrics/penalty_irrelevant.json"]["data"]
        metrics["MRR@10"] = metrics["MRR@10"] - lam / 10
        runs.append(_range(state, None))
    head["experiments"] = runs
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exps.json").write_text(json.dumps(doc))
    assert main(["exps.json", *args]) == 0
    frame = pl.read_csv(tmp_path / "plots/sweeps/lambda.csv")
    methods = set(head["data"]["params"]["params.yaml"]["data"]["methods"])
    assert set(frame["method"]) <= methods and len(methods) > 20
    assert (tmp_path / "plots/sweeps/lambda.png").stat().st_size > 1000


def test_a_method_with_two_weighted_terms_is_drawn_at_the_swept_terms_lambda(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A method with two λ-weighted terms (penalty on relevant, reward on irrelevant
    documents): a sweep of the reward's λ draws the reward's λ (the term whose value
    changes), not the first term's fixed one; naming the term's key gives the same; with
    both terms changing, `methods.*.lambda` is ambiguous and the method is left out (logged)."""
    def state(i: int, pen: float, rew: float) -> dict[str, Any]:
        s = _state(f"{i}" * 40, f"e{i}", 1.0, 1.0, 10, 0.45)
        data = s["data"]
        data["params"]["params.yaml"]["data"]["methods"]["two"] = {"ordering": "shuffle", "loss": {
            "penalty": {"docs": "relevant", "lambda": pen},
            "reward": {"docs": "irrelevant", "lambda": rew}}}  # fmt: skip
        data["metrics"]["metrics/two.json"] = {"data": {"MRR@10": 0.4 + rew / 10}}
        return s

    doc = [state(0, 1.0, 0.5), state(1, 1.0, 2.0)]
    for param in ("methods.*.lambda", "methods.*.loss.reward.lambda"):
        frame = sweep_frame(experiments(doc), param, ["MRR@10"], methods=["two"])
        assert frame.select("x", "MRR@10").rows() == [("0.5", pytest.approx(0.45)),
                                                      ("2", pytest.approx(0.6))]  # fmt: skip
    both = [state(0, 1.0, 0.5), state(1, 2.0, 2.0)]
    frame = sweep_frame(experiments(both), "methods.*.lambda", ["MRR@10"], methods=["two"])
    assert frame.height == 0 and "name one: methods.*.loss.<term>.lambda" in caplog.text
