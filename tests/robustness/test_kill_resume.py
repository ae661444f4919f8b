"""Kill campaign: a resumed training run is identical to the byte, wherever the kill lands.

`dvc repro --force -s train@baseline` of the tiny profile, with a checkpoint every 4 of its
24 steps per fold, is killed with SIGKILL again and again: at random moments of the whole
command (DVC's own bookkeeping included: its process group is killed), and inside the stage
right after the last checkpoint of a fold, before its model is saved (the kill that used to
change `tokenizer.json`, issue 24). After each kill, `python -m pipeline.doctor --fix`
repairs whatever the kill left (usually nothing: a resumable checkpoint is kept), and the
same command is run again. Every rerun that completes must leave the model directories, the
runs, the training curve and dvc.lock byte-identical to an uninterrupted run, and no
checkpoint behind; at the end the metrics recomputed from the resumed runs are identical too.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.stages.conftest import run

pytestmark = pytest.mark.slow
log = logging.getLogger(__name__)

FAULTS = Path(__file__).resolve().parent / "faults"
TRAIN = ["dvc", "repro", "--force", "-s", "train@baseline"]
COMPARED = ("models/baseline", "runs/baseline", "plots/train/baseline.csv", "dvc.lock")
MIN_KILLS = 10
CHAINS = (3, 3, 2, 2)  # kills at random moments before a rerun completes (resume of resume)
SAVE_KILLS = (1, 2)  # the stage killed inside the n-th model save: fold 0, fold 1


def _env(fault: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIPELINE_LOG="WARNING")
    if fault:
        env["PYTHONPATH"] = os.pathsep.join([str(FAULTS), env.get("PYTHONPATH", "")])
        env["PIPELINE_FAULT"] = fault
    return env


def _digests(repo: Path) -> dict[str, str]:
    out = {}
    for name in COMPARED:
        path = repo / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            out[str(f.relative_to(repo))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def _start(repo: Path, fault: str | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", *TRAIN],
        cwd=repo,
        env=_env(fault),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the kill reaches the stage too
    )


def _kill_at(repo: Path, seconds: float) -> bool:
    """Start the command and SIGKILL its process group after ``seconds``; False when it
    finished first (no kill)."""
    proc = _start(repo)
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def _repair_and_check(repo: Path) -> str:
    doctor = run([sys.executable, "-m", "pipeline.doctor", "--fix"], repo, check=False)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    return doctor.stdout


@pytest.fixture(scope="module")
def campaign_repo(tiny_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny profile with longer training and checkpoints, reproduced and committed."""
    repo = tmp_path_factory.mktemp("kill") / "repo"
    shutil.copytree(tiny_repo, repo)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["train"].update(epochs=8, max_steps=24, checkpoint_every=4)  # 6 checkpoints a fold
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run([sys.executable, "-m", "dvc", "repro", "evaluate@baseline"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "checkpoints every 4 steps"], repo)
    return repo


def test_sigkill_anywhere_then_rerun_is_byte_identical(campaign_repo: Path) -> None:
    repo = campaign_repo
    started = time.monotonic()
    reference = _digests(repo)
    metrics = (repo / "metrics/baseline.json").read_bytes()
    assert any(k.startswith("models/baseline/fold-1/") for k in reference)
    t0 = time.monotonic()
    run([sys.executable, "-m", *TRAIN], repo)  # uninterrupted, forced: the same bytes again
    duration = time.monotonic() - t0
    assert _digests(repo) == reference
    rng = random.Random(24)
    kills, reruns, notes = 0, 0, []
    plan: list[list[str | float]] = [[f"save:{n}"] for n in SAVE_KILLS]
    plan += [[rng.uniform(0.05, 0.95) * duration for _ in range(n)] for n in CHAINS]
    for chain in plan:
        for when in chain:
            if isinstance(when, str):  # inside the stage, at the n-th Ranker.save
                fault = f"pipeline.models.base:Ranker.save:kill:{when.split(':')[1]}"
                proc = _start(repo, fault)
                assert proc.wait(timeout=900) != 0, "the stage was not killed"
                assert (repo / "checkpoints/baseline").is_dir()  # the last one is kept
                killed = True
            else:
                killed = _kill_at(repo, when)
            kills += killed
            notes.append(_repair_and_check(repo))
        done = run([sys.executable, "-m", *TRAIN], repo, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        reruns += 1
        after = _digests(repo)
        changed = sorted(k for k in {*reference, *after} if reference.get(k) != after.get(k))
        assert not changed, f"after kills at {chain}: {changed}"
        assert not (repo / "checkpoints").exists()  # the completed stage cleared them
    assert kills >= MIN_KILLS, f"only {kills} kills landed before the command finished"
    # the metrics recomputed from the resumed runs: identical bytes, the same dvc.lock
    run([sys.executable, "-m", "dvc", "repro", "--force", "-s", "evaluate@baseline"], repo)
    assert (repo / "metrics/baseline.json").read_bytes() == metrics
    assert _digests(repo) == reference
    status = run([sys.executable, "-m", "dvc", "status", "evaluate@baseline"], repo).stdout
    assert "up to date" in status, status
    log.warning("%d kills, %d reruns in %.0f s; doctor said: %s", kills, reruns,
                time.monotonic() - started, sorted({n.splitlines()[0] for n in notes}))  # fmt: skip


def test_checkpoint_left_when_dvc_restores_the_stage_is_removed(
    campaign_repo: Path, tmp_path: Path
) -> None:
    """Killed after fold 0's last checkpoint, then completed by DVC from its run-cache
    (our code never runs): the checkpoint is stale. The doctor says so, and the next train
    stage of any method deletes it."""
    repo = tmp_path / "restored"
    shutil.copytree(campaign_repo, repo, symlinks=True)
    reference = _digests(repo)
    assert _start(repo, "pipeline.models.base:Ranker.save:kill:1").wait(timeout=900) != 0
    stale = repo / "checkpoints/baseline/fold-0/checkpoint.pt"
    assert stale.is_file()
    restored = run([sys.executable, "-m", "dvc", "repro", "-s", "train@baseline"], repo).stdout
    assert "Stage 'train@baseline' is cached - skipping run" in restored, restored
    assert _digests(repo) == reference and stale.is_file()  # DVC ran none of our code
    report = run([sys.executable, "-m", "pipeline.doctor"], repo, check=False)
    assert report.returncode == 1
    assert "FOUND  checkpoints/baseline: stale checkpoints (train@baseline is up to date" in (
        report.stdout
    )
    run([sys.executable, "-m", "dvc", "repro", "--force", "-s", "train@penalty_irrelevant"], repo)
    assert not (repo / "checkpoints").exists()  # swept when train@penalty_irrelevant started
    baseline = {k: v for k, v in _digests(repo).items() if k != "dvc.lock"}
    assert baseline == {k: v for k, v in reference.items() if k != "dvc.lock"}
