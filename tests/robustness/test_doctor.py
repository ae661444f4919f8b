"""DVC's own failure states, each made by a real DVC process killed at the worst moment, found
and repaired by `python -m pipeline.doctor`; `dvc repro` then completes with the outputs it
had before the kill. The commands run are docs/troubleshooting.md's doctor block, read from it.

- `.dvc/tmp/rwlock` cut: `dvc status` SIGKILLed halfway through rewriting it (DVC edits it in
  place: open for writing, then `json.dump`), as a timed kill or
  `strace -e inject=write:signal=KILL` does;
- `dvc.lock` cut: `dvc commit` SIGKILLed halfway through rewriting it (DVC's YAML dumper);
- a queued experiment stuck in `Running`: its `dvc queue` worker's process group killed.

The kills are injected with tests/robustness/faults (a `sitecustomize` on PYTHONPATH).
Stale checkpoints after DVC restored a stage from its cache: tests/robustness/
test_kill_resume.py; each repair on a toy repository: tests/unit/test_doctor.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.robustness.faulty import env
from tests.stages.conftest import ROOT, run

pytestmark = pytest.mark.slow

KILLS = {  # state → (DVC command killed, fault, the file it leaves cut)
    "rwlock": (["status"], "dvc.rwlock:json.dump:cut", ".dvc/tmp/rwlock"),
    "dvc.lock": (["commit", "-f", "evaluate@baseline"], "dvc.utils.serialize._yaml:_dump:cut",
                 "dvc.lock"),
}  # fmt: skip
OUTPUTS = ("data", "models", "runs", "eval", "metrics", "plots", "dvc.lock")


def readme_commands() -> list[str]:
    """The commands of the first bash block of docs/troubleshooting.md (the doctor's),
    comments dropped."""
    text = (ROOT / "docs" / "troubleshooting.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "docs/troubleshooting.md: no bash block"
    return [line.split("#")[0].strip() for line in block[1].splitlines() if line.strip()]


def _digests(repo: Path) -> dict[str, str]:
    files = [p for name in OUTPUTS for p in sorted((repo / name).rglob("*")) if p.is_file()]
    files.append(repo / "dvc.lock")
    return {str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _shell(repo: Path, command: str) -> subprocess.CompletedProcess[str]:
    """A README command as a user types it (`python`, `dvc` from the virtual environment)."""
    argv = shlex.split(command)
    argv = [sys.executable, *argv[1:]] if argv[0] == "python" else [sys.executable, "-m", *argv]
    return subprocess.run(argv, cwd=repo, env=env(), capture_output=True, text=True, timeout=900)


@pytest.fixture()
def repo(tiny_repo: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(tiny_repo, copy, symlinks=True)
    return copy


@pytest.mark.parametrize("state", list(KILLS))
def test_readme_commands_repair_a_file_dvc_was_killed_writing(repo: Path, state: str) -> None:
    command, fault, target = KILLS[state]
    before = _digests(repo)
    whole = (repo / target).read_bytes() if (repo / target).is_file() else b""
    killed = subprocess.run([sys.executable, "-m", "dvc", *command], cwd=repo, env=env(fault),
                            capture_output=True, text=True, timeout=900)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    cut = (repo / target).read_bytes()
    # half of what DVC wrote (dvc commit rewrites the same dvc.lock)
    assert cut and not cut.endswith(b"\n") and len(cut) < max(len(whole), 40_000)
    broken = run([sys.executable, "-m", "dvc", "status"], repo, check=False)
    if state == "rwlock":  # the campaign's message; a cut dvc.lock may still parse (see doctor)
        assert broken.returncode != 0 and "Unable to read RWLock-file" in broken.stderr

    report, fix, repro = (_shell(repo, c) for c in readme_commands())
    assert report.returncode == 1, report.stdout + report.stderr
    assert f"FOUND  {target} is cut" in report.stdout, report.stdout
    assert fix.returncode == 0 and f"FIXED  {target} is cut" in fix.stdout, fix.stdout + fix.stderr
    assert repro.returncode == 0, repro.stderr[-3000:]
    assert _digests(repo) == before  # every output and dvc.lock, to the byte
    again = _shell(repo, "python -m pipeline.doctor")
    assert again.returncode == 0 and "nothing to repair" in again.stdout
    sys.stdout.write(f"\n--- {state}\n{report.stdout}{fix.stdout}")


def _worker_started(repo: Path, deadline: float) -> int:
    """The pid of the queue worker once the experiment process it started is running."""
    run_dir, pid_file = repo / ".dvc/tmp/exps/run", repo / ".dvc/tmp/exps/celery"
    while time.monotonic() < deadline:
        infos = [json.loads(p.read_text() or "{}") for p in run_dir.glob("*/*.json")]
        workers = list(pid_file.glob("dvc-exp-worker-*.pid"))
        if any(i.get("pid") for i in infos) and workers and workers[0].read_text().strip():
            return int(workers[0].read_text())
        time.sleep(0.2)
    raise AssertionError("the queued experiment did not start")


def test_experiment_whose_worker_was_killed_is_marked_failed(repo: Path) -> None:
    before = _digests(repo)
    run([sys.executable, "-m", "dvc", "exp", "run", "--queue", "-n", "killed", "-S",
         "train.seed=11"], repo)  # fmt: skip
    subprocess.run([sys.executable, "-m", "dvc", "queue", "start"], cwd=repo, env=env(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # fmt: skip
    worker = _worker_started(repo, time.monotonic() + 300)
    os.killpg(os.getpgid(worker), signal.SIGKILL)  # the worker and the experiment it runs
    time.sleep(1)
    status = run([sys.executable, "-m", "dvc", "queue", "status"], repo).stdout
    assert re.search(r"^\w+\s+killed\s.*\sRunning$", status, re.M), status
    assert "0 active" in status

    report = _shell(repo, "python -m pipeline.doctor")
    assert report.returncode == 1, report.stdout + report.stderr
    assert "FOUND  experiment 'killed' is listed as Running, but no queue worker" in report.stdout
    fix = _shell(repo, "python -m pipeline.doctor --fix")
    assert fix.returncode == 0 and "FIXED  experiment 'killed'" in fix.stdout, fix.stdout
    status = run([sys.executable, "-m", "dvc", "queue", "status"], repo).stdout
    assert re.search(r"^\w+\s+killed\s.*\sFailed$", status, re.M), status
    shown = run([sys.executable, "-m", "dvc", "exp", "show", "--json"], repo).stdout
    assert '"Running"' not in shown and "running" not in shown.lower()
    assert _shell(repo, "dvc repro").returncode == 0
    assert _digests(repo) == before
