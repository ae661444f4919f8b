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

from tests.robustness.faulty import env
from tests.stages.conftest import run

pytestmark = pytest.mark.slow
log = logging.getLogger(__name__)

TRAIN = ["dvc", "repro", "--force", "-s", "train@baseline"]
COMPARED = ("models/baseline", "runs/baseline", "plots/train/baseline.csv", "dvc.lock")
MIN_KILLS = 10
CHAINS = (3, 3, 2)  # kills at random moments before a rerun completes (resume of resume)
SAVE_KILLS = (1, 2)  # the stage killed inside the n-th model save: fold 0, fold 1


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
        env=env(fault),
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


def _kill_inside(repo: Path, save: int) -> None:
    """Kill the stage inside its ``save``-th ``Ranker.save``: after the fold's last
    checkpoint (step 24 of 24), before its model is written."""
    proc = _start(repo, f"pipeline.models.base:Ranker.save:kill:{save}")
    assert proc.wait(timeout=900) != 0, "the stage was not killed"
    assert list((repo / "checkpoints/baseline").glob("fold-*/checkpoint.pt"))  # kept


def _same(repo: Path, reference: dict[str, str], what: str) -> None:
    after = _digests(repo)
    changed = sorted(k for k in {*reference, *after} if reference.get(k) != after.get(k))
    assert not changed, f"{what}: {changed}"
    assert not (repo / "checkpoints").exists()  # the completed stage cleared them


def test_sigkill_anywhere_then_rerun_is_byte_identical(campaign_repo: Path) -> None:
    repo, started = campaign_repo, time.monotonic()
    reference = _digests(repo)
    metrics = (repo / "metrics/baseline.json").read_bytes()
    assert any(k.startswith("models/baseline/fold-1/") for k in reference)
    run([sys.executable, "-m", *TRAIN], repo)  # uninterrupted, forced: the same bytes again
    duration = time.monotonic() - started
    _same(repo, reference, "an uninterrupted forced run")
    rng, kills, notes = random.Random(24), [], []
    for save in SAVE_KILLS:
        _kill_inside(repo, save)
        kills.append(f"save {save}")
        notes.append(_repair_and_check(repo))
        run([sys.executable, "-m", *TRAIN], repo)
        _same(repo, reference, f"after the kill inside save {save}")
    for n in CHAINS:  # n kills at random moments in a row, each run resuming the last one
        chain: list[float] = []
        while len(chain) < n:
            when = rng.uniform(0.05, 0.95) * duration
            if _kill_at(repo, when):  # else it finished first: a completed rerun, also fine
                chain.append(round(when, 1))
            notes.append(_repair_and_check(repo))
        kills += chain
        run([sys.executable, "-m", *TRAIN], repo)
        _same(repo, reference, f"after kills at {chain} s")
    assert len(kills) >= MIN_KILLS, kills
    # the metrics recomputed from the resumed runs: identical bytes, the same dvc.lock
    run([sys.executable, "-m", "dvc", "repro", "--force", "-s", "evaluate@baseline"], repo)
    assert (repo / "metrics/baseline.json").read_bytes() == metrics
    _same(repo, reference, "after evaluate")
    status = run([sys.executable, "-m", "dvc", "status", "evaluate@baseline"], repo).stdout
    assert "up to date" in status, status
    log.warning("kills %s (a full run %.0f s) in %.0f s; the doctor said: %s", kills, duration,
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
    _kill_inside(repo, 1)
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
