"""The grid runner's logic without a cluster (pipeline/grid): grid files, experiment names,
overrides, validation before submitting, SLURM's states, the data job's plan. The run on a
real SLURM is tests/stages/test_grid_slurm.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.config import ParamsError
from pipeline.grid import plan, runner, slurm, spec
from pipeline.report import docs

ROOT = Path(__file__).resolve().parents[2]
DOC_TEST = "tests/unit/test_grid_spec.py::test_the_documented_grid_file_is_valid"


def grid(tmp_path: Path, text: str) -> spec.GridSpec:
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    return spec.load(path)


@pytest.mark.slow
def test_the_documented_grid_file_is_valid(tmp_path: Path) -> None:
    """docs/paper-scale.md's grid file: 4 methods × 3 seeds, λ swept (3 values) for one of
    them only (18 experiments), each valid as `dvc exp run -S` applies it to params.yaml."""
    doc = ROOT / "docs" / "paper-scale.md"
    (block,) = [b for b in docs.parse(doc) if b.kind == "tested-by" and b.name == DOC_TEST]
    exps = spec.expand(grid(tmp_path, block.text))
    assert len(exps) == 18 and len({e.name for e in exps}) == 18
    swept = [e for e in exps if e.method == "penalty_irrelevant"]
    assert len(swept) == 9 and all("lambda" in e.name for e in swept)
    assert not any("lambda" in o for e in exps if e.method == "baseline" for o in e.overrides)
    runner.validate(ROOT, exps)
    g = grid(tmp_path, block.text)
    assert g.task.args() == ["--cpus-per-task=8", "--mem=32G", "--time=08:00:00",
                             "--gres=gpu:1", "--partition=gpu"]  # fmt: skip


LAMBDA = "methods.penalty_irrelevant.loss.penalty.lambda"


def test_names_come_from_the_entry_alone(tmp_path: Path) -> None:
    exp = spec.experiment("penalty_irrelevant", 1, [f"{LAMBDA}=0.5"])
    assert exp.name == "penalty_irrelevant-s1-lambda0.5-7359bb"  # the doc's example
    assert exp.overrides == ("train.seeds=[1]", f"{LAMBDA}=0.5")
    assert exp.run_args() == ["exp", "run", "-n", exp.name, "-S", "train.seeds=[1]", "-S",
                              f"{LAMBDA}=0.5",
                              "evaluate@penalty_irrelevant"]  # fmt: skip
    assert spec.experiment("baseline", 2, []).name == "baseline-s2"
    assert spec.experiment("baseline", None, []).overrides == ()
    # other grids, other orders, the same entry: the same name
    g = grid(tmp_path, "name: g\nmethods: [baseline, penalty_irrelevant]\nseeds: [2, 1]\n"
                       f"set: ['{LAMBDA}=1,0.5']\n")  # fmt: skip
    assert exp.name in {e.name for e in spec.expand(g)}
    # a lossy slug still gives distinct names; keys outside the method's own, only a hash
    a, b = (spec.experiment("baseline", 1, [f"methods.baseline.psi={n}"]) for n in ("a/b", "a_b"))
    assert a.name != b.name and a.name.startswith("baseline-s1-psia_b-")
    assert re.fullmatch(r"baseline-s1-[0-9a-f]{6}",
                        spec.experiment("baseline", 1, ["candidates.top_k=20"]).name)  # fmt: skip


def test_a_sweep_is_a_product_and_other_methods_keys_are_left_out(tmp_path: Path) -> None:
    g = grid(tmp_path, "name: g\nmethods: [baseline, penalty_irrelevant]\nseeds: [1]\nset:\n"
                       "  - candidates.top_k=10,20\n"
                       "  - methods.penalty_irrelevant.loss.penalty.lambda=0.25,0.5\n")  # fmt: skip
    exps = spec.expand(g)
    by_method = {m: [e for e in exps if e.method == m] for m in g.methods}
    assert len(by_method["baseline"]) == 2  # top_k only: λ belongs to another method
    assert len(by_method["penalty_irrelevant"]) == 4
    assert {o for e in by_method["baseline"] for o in e.overrides} == {
        "train.seeds=[1]", "candidates.top_k=10", "candidates.top_k=20"}  # fmt: skip


def test_command_line_replaces_methods_and_seeds_and_adds_overrides(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("name: g\nmethods: [baseline]\nseeds: [1, 2]\nset: [candidates.top_k=10]\n")
    g = spec.load(path, methods=["penalty_relevant"], seeds=[7], sets=["train.lr=1e-5"])
    assert (g.methods, g.seeds, g.set_) == (["penalty_relevant"], [7],
                                             ["candidates.top_k=10", "train.lr=1e-5"])  # fmt: skip
    assert spec.load(None, methods=["baseline"], name="cli").name == "cli"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("name: g\nmethods: [baseline]\nseed: [1]\n", r"'grid.seed' is unknown.*'seeds'"),
        ("name: g\nmethods: []\n", "at least one method"),
        ("name: 'a b'\nmethods: [baseline]\n", "letters, digits"),
        ("name: g\nmethods: [baseline]\ntask: {cpus: 0}\n", r"'task.cpus'.*out of range"),
        ("name: g\nmethods: [baseline]\ntask: {gpu: 1}\n", r"'task.gpu' is unknown"),
        ("name: g\nmethods: [b]\nseeds: [1]\nset: ['train.seeds=[2]']\n", "set by `seeds:`"),
    ],
)
def test_grid_file_errors_name_the_key(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ParamsError, match=match):
        grid(tmp_path, text)


def test_unknown_methods_and_keys_are_refused_before_submitting() -> None:
    with pytest.raises(runner.GridError, match=r"experiment penalty_irelevant-s1 .*unknown method"):
        runner.validate(ROOT, [spec.experiment("penalty_irelevant", 1, [])])
    bad = spec.experiment("baseline", 1, ["train.lrr=0.1"])
    with pytest.raises(runner.GridError, match=r"experiment baseline-s1-\w+ .*train.lrr"):
        runner.validate(ROOT, [bad])


@pytest.mark.parametrize(
    ("state", "meaning"),
    [("PENDING", "pending"), ("REQUEUED", "pending"), ("RUNNING", "running"),
     ("COMPLETING", "running"), ("COMPLETED", "completed"), ("FAILED", "failed"),
     ("NODE_FAIL", "failed"), ("TIMEOUT", "timed out"), ("PREEMPTED", "preempted"),
     ("CANCELLED", "cancelled"), ("OUT_OF_MEMORY", "out of memory"), (None, "missing")],
)  # fmt: skip
def test_slurm_states_mean_experiment_states(state: str | None, meaning: str) -> None:
    assert slurm.meaning(state) == meaning


def test_squeue_and_sacct_lines_are_read_per_array_task() -> None:
    text = "12_0|RUNNING\n12_1|CANCELLED by 0\n13_0|PENDING\n12_2|COMPLETED+\n"
    assert slurm._parse(text, {"12"}) == {"12_0": "RUNNING", "12_1": "CANCELLED",
                                          "12_2": "COMPLETED"}  # fmt: skip
    # squeue shows an array not yet split (pending on its data job) as one line
    assert slurm._parse("7_[0-3]|PENDING\n8_[0]|PENDING\n", {"7"}) == {"7": "PENDING"}


def _fake_client(folder: Path, name: str, body: str) -> None:
    exe = folder / name
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)


def test_a_controller_that_does_not_answer_is_asked_again_never_read_as_no_jobs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A squeue timeout once made a pending task "missing" (and `submit` would resubmit it)."""
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setattr(slurm.time, "sleep", lambda s: None)
    count = tmp_path / "count"
    _fake_client(
        tmp_path,
        "squeue",
        f"echo x >> {count}; [ $(wc -l < {count}) -ge 2 ] || "
        '{ echo "slurm_load_jobs error: Socket timed out" >&2; exit 1; }; echo "7_0|PENDING"',
    )
    _fake_client(tmp_path, "sacct", "echo 'accounting storage is disabled' >&2; exit 1")
    assert slurm.states(["7"]) == {"7_0": "PENDING"}
    _fake_client(tmp_path, "squeue", 'echo "slurm_load_jobs error: Socket timed out" >&2; exit 1')
    with pytest.raises(slurm.SlurmError, match=r"squeue failed 4 times.*Socket timed out"):
        slurm.states(["7"])


def test_without_slurm_clients_the_error_says_how_to_get_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(slurm.SlurmError, match=r"`sbatch` is not on PATH.*slurm-client"):
        slurm.sbatch(tmp_path / "x.sbatch", [])


@pytest.mark.slow
def test_the_data_job_runs_the_shared_stages_once_per_set_they_read() -> None:
    """`dvc dag` of this repository: a method's evaluation needs the five data stages and
    its own three; the overrides the data stages do not read (seeds, λ) share one set."""
    exps = [spec.experiment(m, s, o) for m in ("baseline", "penalty_irrelevant") for s in (1, 2)
            for o in ([], ["methods.penalty_irrelevant.loss.penalty.lambda=0.5"])]  # fmt: skip
    stages = plan.shared_stages(ROOT, exps)
    assert set(stages) == {"params", "extract", "score", "candidates", "transfer_data", "features"}
    assert plan.prepare_sets(ROOT, stages, exps) == [[]]
    other = [*exps, spec.experiment("baseline", 1, ["candidates.top_k=20"])]
    assert plan.prepare_sets(ROOT, stages, other) == [[], ["candidates.top_k=20"]]
