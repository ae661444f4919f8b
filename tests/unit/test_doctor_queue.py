"""A queued experiment whose `dvc queue` worker is killed while it runs, on a one-stage toy
DVC repository with the real `dvc exp run --queue` and `dvc queue start`: only the worker
process is SIGKILLed (an OOM kill of the worker), so the experiment (`dvc exp exec-run`, its
child) runs on, commits its result in its temporary workspace and is never collected. The
doctor collects it before it cleans anything (pipeline/doctor_queue.py): `dvc exp show`
then lists it with its metrics. Killing the worker's whole process group (the experiment
too, nothing finished): tests/robustness/test_doctor.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.stages.conftest import run

pytestmark = pytest.mark.slow  # a real dvc queue worker

ROOT = Path(__file__).resolve().parents[2]
TRAIN = """\
import json, time, yaml
p = yaml.safe_load(open("params.yaml"))
time.sleep(p["sleep"])
json.dump({"score": p["x"] * 2}, open("metrics.json", "w"))
"""
DVC_YAML = """\
stages:
  train:
    cmd: python train.py
    deps:
      - train.py
    params:
      - x
      - sleep
    metrics:
      - metrics.json:
          cache: false
"""


def _dvc(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "dvc", *args], repo, check=check)


def _doctor(repo: Path, *args: str) -> tuple[int, str]:
    proc = run([sys.executable, "-m", "pipeline.doctor", "--repo", str(repo), *args], ROOT,
               check=False)  # fmt: skip
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "dvc.yaml").write_text(DVC_YAML)
    (repo / "train.py").write_text(TRAIN)
    (repo / "params.yaml").write_text("x: 1\nsleep: 0\n")
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@example.org"],
                ["git", "config", "user.name", "t"], [sys.executable, "-m", "dvc", "init", "-q"],
                [sys.executable, "-m", "dvc", "config", "core.analytics", "false"],
                [sys.executable, "-m", "dvc", "repro", "-q"], ["git", "add", "-A"],
                ["git", "commit", "-qm", "baseline"]):  # fmt: skip
        run(cmd, repo)
    return repo


def _wait(what: str, ready: object, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _info(repo: Path, suffix: str) -> dict[str, object]:
    files = list((repo / ".dvc/tmp/exps/run").glob(f"*/*.{suffix}"))
    return json.loads(files[0].read_text() or "{}") if files else {}


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _kill_worker_and_let_the_experiment_finish(repo: Path, sleep: int = 15) -> None:
    """Queue, start, SIGKILL the worker alone; while the orphan runs, the doctor changes
    nothing (exit 2: a DVC process runs in the repository)."""
    _dvc(repo, "exp", "run", "--queue", "-n", "orphan", "-S", "x=5", "-S", f"sleep={sleep}")
    # DVC spawns the worker as `dvc exp queue-worker`, found on PATH: the venv's first (CI
    # runs `.venv/bin/python -m pytest` without activating it: no worker ever started)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    subprocess.run([sys.executable, "-m", "dvc", "queue", "start"], cwd=repo,
                   env={**os.environ, "PATH": path},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # fmt: skip
    pid_file = repo / ".dvc/tmp/exps/celery/dvc-exp-worker-1.pid"
    _wait("the experiment to start", lambda: _info(repo, "json").get("pid")
          and pid_file.is_file() and pid_file.read_text().strip())  # fmt: skip
    experiment = int(str(_info(repo, "json")["pid"]))
    os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the worker only, not its group
    if sleep > 15:
        code, out = _doctor(repo, "--fix")
        assert code == 2 and "DVC is running" in out and "exec-run" in out, out
    _wait("the orphaned experiment to finish", lambda: _gone(experiment))
    assert _info(repo, "run").get("result_ref"), _info(repo, "run")  # it committed its result
    status = _dvc(repo, "queue", "status").stdout
    assert "orphan" in status and "Running" in status and "0 active" in status, status


def _shown(repo: Path) -> dict[str, dict[str, object]]:
    """``{experiment name: its metrics}`` of `dvc exp show --json`."""
    out = {}
    for row in json.loads(_dvc(repo, "exp", "show", "--json").stdout):
        for exp in row.get("experiments") or []:
            state = (exp.get("executor") or {}).get("state")
            for rev in exp.get("revs") or []:
                data = rev.get("data") or {}
                metrics = (data.get("metrics") or {}).get("metrics.json", {}).get("data", {})
                out[exp.get("name") or rev["rev"]] = {**metrics, "state": state}
    return out


def test_an_experiment_finished_after_its_worker_was_killed_is_collected(repo: Path) -> None:
    _kill_worker_and_let_the_experiment_finish(repo, sleep=40)
    assert _shown(repo)["orphan"]["state"] == "running"  # for ever: nothing collects it
    workspaces = list((repo / ".dvc/tmp/exps").glob("tmp*"))
    assert len(workspaces) == 1  # the result lives only there

    code, out = _doctor(repo)
    assert code == 1, out
    assert "FOUND  experiment 'orphan' finished after its queue worker was killed, but was " \
        "never collected: its result (refs/exps/" in out, out  # fmt: skip
    assert "mark it failed" not in out, out
    assert out.count("FOUND") == 1, out  # once: not again as a workspace holding a result
    code, out = _doctor(repo, "--fix")
    assert code == 0 and "FIXED  experiment 'orphan' finished" in out, out

    shown = _shown(repo)
    assert shown["orphan"]["score"] == 10 and shown["orphan"]["state"] == "success", shown
    assert "Success" in _dvc(repo, "queue", "status").stdout
    assert not list((repo / ".dvc/tmp/exps").glob("tmp*"))  # deleted once collected
    assert _doctor(repo)[0] == 0


def test_a_workspace_holding_a_result_is_collected_before_it_is_deleted(repo: Path) -> None:
    """The queue entry no longer says Running (the doctor of issue 43 ran `dvc queue kill`,
    as a user may): the workspace is the only copy of the result, and stays until copied."""
    _kill_worker_and_let_the_experiment_finish(repo)
    _dvc(repo, "queue", "kill", "orphan", check=False)  # what the doctor used to do
    assert "orphan" not in _shown(repo)  # the finished result: listed nowhere

    code, out = _doctor(repo)
    assert code == 1 and "holds experiment results the repository lacks (refs/exps/" in out, out
    assert "temporary workspaces of queued experiments" not in out, out  # not to be deleted
    code, out = _doctor(repo, "--fix")
    assert code == 0, out
    assert _shown(repo)["orphan"]["score"] == 10, _shown(repo)
    assert not list((repo / ".dvc/tmp/exps").glob("tmp*"))
    assert _doctor(repo)[0] == 0


def test_a_result_that_cannot_be_collected_keeps_its_workspace(repo: Path) -> None:
    """Another experiment already holds the name (a sibling commit): the collection fails
    with one line naming the fix, and the workspace, the result's only copy, stays."""
    _kill_worker_and_let_the_experiment_finish(repo)
    ref = str(_info(repo, "run")["result_ref"])
    tree = run(["git", "rev-parse", "HEAD^{tree}"], repo).stdout.strip()
    other = run(["git", "commit-tree", "-p", "HEAD", "-m", "another", tree], repo).stdout.strip()
    run(["git", "update-ref", ref, other], repo)
    code, out = _doctor(repo, "--fix")
    assert code == 1 and "FAILED experiment 'orphan' finished" in out, out
    assert "the workspace is kept" in out and "`dvc exp rename`" in out, out
    (workspace,) = (repo / ".dvc/tmp/exps").glob("tmp*")
    assert run(["git", "rev-parse", ref], workspace).stdout.strip() != other  # the result
    assert run(["git", "rev-parse", ref], repo).stdout.strip() == other  # left alone
