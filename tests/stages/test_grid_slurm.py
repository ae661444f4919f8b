"""The grid on a real SLURM (docs/paper-scale.md, "Running the grid on a cluster"): the
documented commands, run as written on the tiny profile's 2 methods × 2 seeds (a 4-task
array on a one-node cluster, tests/slurm_cluster.py), with one task cancelled while it
trains and the grid submitted again; the collected experiments are byte for byte those of a
serial `dvc exp run` of the same experiments.

Needs root and Debian's slurmctld, slurmd, slurm-client and munge (.ci/run installs them);
skips, saying why, where they are missing.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline.grid import runner, spec
from pipeline.grid.workspace import Submission
from pipeline.report import docs
from tests import slurm_cluster
from tests.stages.conftest import ROOT, run

pytestmark = pytest.mark.slow

DOC = ROOT / "docs" / "paper-scale.md"
TEST = "tests/stages/test_grid_slurm.py::test_the_documented_grid_runs_on_slurm_like_a_serial_run"
GRID = """\
name: tiny
methods: [baseline, penalty_irrelevant]
seeds: [1, 2]
git_remote: cluster
task: {cpus: 1}
"""
STEPS = ["submit", "status", "submit", "collect"]  # the documented order
# run-cache entries of a method's stages: dropped from the copies, so every task trains
METHOD_STAGE = re.compile(r"^cmd: python -m stages\.(order|train|evaluate) (?!bm25|zero-shot)",
                          re.MULTILINE)  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurm_cluster.Cluster]:
    why = slurm_cluster.unavailable()
    if why:
        pytest.skip(f"no SLURM test cluster: {why}")
    started = slurm_cluster.start(tmp_path_factory.mktemp("slurm"))
    try:
        yield started
    finally:
        started.stop()


def documented() -> tuple[list[str], list[list[str]]]:
    """The two blocks marked as run by this test: the remotes' shell lines, and the grid's
    commands (split as the shell splits them, comments dropped)."""
    blocks = [b.text for b in docs.parse(DOC) if b.kind == "tested-by" and b.name == TEST]
    assert len(blocks) == 2, f"{DOC} should have 2 blocks marked tested-by {TEST}"
    setup = [line for line in blocks[0].splitlines() if line.strip()]
    grid = [c for c in (shlex.split(x, comments=True) for x in blocks[1].splitlines()) if c]
    return setup, grid


def lab_copy(tiny_repo: Path, dest: Path) -> Path:
    """The reproduced tiny profile at HEAD, without experiments, and without the run-cache
    of any method's stages (the shared data stages' entries stay: as on a cluster that ran
    them before, and as the data job leaves them)."""

    def skip(folder: str, names: list[str]) -> list[str]:
        return ["tmp"] if Path(folder) == tiny_repo / ".dvc" else []

    shutil.copytree(tiny_repo, dest, symlinks=True, ignore=skip)
    run(["git", "reset", "-q", "--hard"], dest)
    refs = run(["git", "for-each-ref", "--format=%(refname)", "refs/exps"], dest).stdout
    for ref in refs.split():
        run(["git", "update-ref", "-d", ref], dest)
    for entry in (dest / ".dvc" / "cache" / "runs").rglob("*"):
        if entry.is_file() and METHOD_STAGE.search(entry.read_text(errors="replace")):
            entry.unlink()
    return dest


def wait(until: Callable[[], bool], what: str, cluster: slurm_cluster.Cluster,
         timeout: float = 600) -> None:  # fmt: skip
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s{cluster.logs()}")
        time.sleep(1)


def job_logs(lab: Path) -> str:
    """The grid's job logs (for a failure's message)."""
    logs = sorted((lab / ".dvc" / "tmp" / "grid" / "tiny" / "logs").glob("*.out"))
    return "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in logs)


def latest(lab: Path) -> Submission:
    folder = lab / ".dvc" / "tmp" / "grid" / "tiny" / "submissions"
    return Submission.read(max(folder.glob("*.json"), key=lambda p: int(p.stem)))


def cancel_one_in_training(lab: Path, cluster: slurm_cluster.Cluster) -> str:
    """Cancel the first array task whose log shows it training; that experiment's name."""
    sub = latest(lab)
    logs = Path(sub.workdir) / "logs"
    found: list[int] = []

    def training() -> bool:
        for i in range(len(sub.experiments)):
            log = logs / f"{sub.jobs['array']}_{i}.out"
            if log.is_file() and "Running stage 'train@" in log.read_text(errors="replace"):
                found.append(i)
                return True
        return False

    wait(training, "an array task training", cluster)
    cluster.client("scancel", f"{sub.jobs['array']}_{found[0]}")
    return str(sub.experiments[found[0]]["name"])


def serial_runs(repo: Path, experiments: list[spec.Experiment]) -> None:
    """Each experiment by `dvc exp run` in the workspace, one after the other, each from
    HEAD (as `dvc exp run` is used without a cluster)."""
    for exp in experiments:
        run(["git", "reset", "-q", "--hard"], repo)
        run([sys.executable, "-m", "dvc", *exp.run_args()], repo)


def show(repo: Path, exp: spec.Experiment, path: str) -> bytes:
    base = run(["git", "rev-parse", "HEAD"], repo).stdout.strip()
    ref = runner.exp_ref(base, exp.name)
    return subprocess.run(["git", "show", f"{ref}:{path}"], cwd=repo, capture_output=True,
                          check=True).stdout  # fmt: skip


def test_the_documented_grid_runs_on_slurm_like_a_serial_run(
    cluster: slurm_cluster.Cluster, tiny_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup, commands = documented()
    assert [c[:3] for c in commands[:4]] == [["python", "-m", "pipeline.grid"]] * 4
    assert [c[3] for c in commands[:4]] == STEPS and commands[4] == ["dvc", "exp", "show"]
    lab, serial = lab_copy(tiny_repo, tmp_path / "lab"), lab_copy(tiny_repo, tmp_path / "ref")
    (tmp_path / "shared").mkdir()
    env = {k: cluster.env[k] for k in ("PATH", "SLURM_CONF")}
    for key, value in env.items():  # this process reads the states too (`settled`)
        monkeypatch.setenv(key, value)
    for line in setup:  # as a user types them, the shared folder in the test's own
        run(["bash", "-c", line.replace("/shared/", f"{tmp_path}/shared/")], lab)
    (lab / "grid.yaml").write_text(GRID)
    experiments = spec.expand(spec.load(lab / "grid.yaml"))
    assert len(experiments) == 4

    run(commands[0], lab, env=env)  # submit
    assert [e["name"] for e in latest(lab).experiments] == [e.name for e in experiments]
    killed = cancel_one_in_training(lab, cluster)
    serial_runs(serial, experiments)  # meanwhile, the reference
    grid = spec.load(lab / "grid.yaml")

    def settled() -> bool:
        return all(
            r.state not in ("pending", "running", "missing") for r in runner.status(lab, grid)
        )

    wait(settled, "the first array", cluster)
    table = run(commands[1], lab, env=env).stdout + job_logs(lab)  # status
    names = {e.name for e in experiments}
    states = {w[0]: w[1] for w in map(str.split, table.splitlines()) if w and w[0] in names}
    assert states == {n: "cancelled" if n == killed else "done" for n in names}, table
    assert re.search(r"^data job \d+: completed \(COMPLETED\)", table, re.MULTILINE), table
    run(commands[2], lab, env=env)  # submit again: only the cancelled one
    assert [e["name"] for e in latest(lab).experiments] == [killed]
    wait(settled, "the rerun", cluster)
    collected = run(commands[3], lab, env=env).stdout  # collect
    assert collected.count(" collected ") == 4, collected + job_logs(lab)
    shown = run(commands[4], lab, env={**env, "COLUMNS": "2000"}).stdout  # dvc exp show
    assert all(e.name in shown for e in experiments), shown

    for exp in experiments:
        # dvc.lock holds the md5 of every cached output (models, runs, DVCLive's metrics.json)
        for path in ("dvc.lock", f"metrics/{exp.method}.json"):
            assert show(lab, exp, path) == show(serial, exp, path), (exp.name, path)
    seeds = [show(lab, e, "dvc.lock") for e in experiments if e.method == "baseline"]
    assert seeds[0] != seeds[1]  # the seeds trained different models
