"""Kill campaign: a resumed training run is identical to the byte, wherever the kill lands.

`dvc repro --force -s train@baseline` of the tiny profile, with a checkpoint every 4 of its 24
steps per fold, is killed with SIGKILL again and again, each rerun resuming what the last one
left, and only then run to the end; the model directories, the runs, the training curve and
dvc.lock must then be byte-identical to the uninterrupted run, with no checkpoint behind, and
the metrics recomputed from the resumed runs identical too. After each kill
`python -m pipeline.doctor --fix` repairs whatever it left (usually nothing).

Two chains cover the kill sites with 6 kills and two completed reruns (issue 34: 10 kills at
random moments and six completed runs took 162 s on a quiet 2-core machine, these 99 s). The
first kills the stage where it writes, in the order a run reaches them: inside the 2nd
checkpoint write of fold 0 (an empty temporary file left), inside fold 0's model save after its
last checkpoint (the kill that used to change `tokenizer.json`, issue 24), and inside fold 1's
model save; the rerun then retrains fold 0 (its checkpoint went with its saved model) and
resumes fold 1. The second kills the whole command (DVC's own bookkeeping included: its process
group is killed) at 3 random moments, each rerun resuming the last one: mid-training, the rerank
and DVC's hashing and lock writing are where those land. The kills where DVC itself writes (a
cut `dvc.lock` or rwlock) are tests/robustness/test_doctor.py's.
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
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.robustness.faulty import env
from tests.stages.conftest import run

pytestmark = pytest.mark.slow
log = logging.getLogger(__name__)

TRAIN = ["dvc", "repro", "--force", "-s", "train@baseline"]
COMPARED = ("models/baseline", "runs/baseline", "dvclive/baseline", "dvc.lock")
SAVE = "pipeline.models.base:Ranker.save:kill"
SITES = (  # the stage killed where it writes, in the order a run reaches them
    ("torch:save:kill:2", "fold 0's 2nd checkpoint write"),
    (f"{SAVE}:1", "fold 0's model save, after its last checkpoint"),
    (f"{SAVE}:2", "fold 1's model save (fold 0's model saved first)"),
)
RANDOM_KILLS = 3  # the second chain: whole command, random moments, resume of resume
MIN_KILLS = len(SITES) + RANDOM_KILLS


@dataclass(frozen=True)
class Campaign:
    """The committed repository and how long an uninterrupted training run took."""

    repo: Path
    seconds: float


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


def _kill_inside(repo: Path, fault: str) -> None:
    """Run the command with the stage killed at ``fault`` (it must be reached)."""
    proc = _start(repo, fault)
    assert proc.wait(timeout=900) != 0, f"the stage was not killed at {fault}"


def _repair_and_check(repo: Path) -> str:
    doctor = run([sys.executable, "-m", "pipeline.doctor", "--fix"], repo, check=False)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    return doctor.stdout


@pytest.fixture(scope="module")
def campaign(tiny_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    """The tiny profile with longer training and checkpoints, reproduced and committed; the
    training stage timed alone (the random kills fall within that time)."""
    repo = tmp_path_factory.mktemp("kill") / "repo"
    shutil.copytree(tiny_repo, repo)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["train"].update(epochs=8, max_steps=24, checkpoint_every=4)  # 6 checkpoints a fold
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    started = time.monotonic()
    run([sys.executable, "-m", "dvc", "repro", "-s", "train@baseline"], repo)
    seconds = time.monotonic() - started
    run([sys.executable, "-m", "dvc", "repro", "evaluate@baseline"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "checkpoints every 4 steps"], repo)
    return Campaign(repo, seconds)


@pytest.fixture(scope="module")
def campaign_repo(campaign: Campaign) -> Path:
    return campaign.repo


def _same(repo: Path, reference: dict[str, str], what: str) -> None:
    after = _digests(repo)
    changed = sorted(k for k in {*reference, *after} if reference.get(k) != after.get(k))
    assert not changed, f"{what}: {changed}"
    assert not (repo / "checkpoints").exists()  # the completed stage cleared them


def test_sigkill_anywhere_then_rerun_is_byte_identical(campaign: Campaign) -> None:
    repo, started, duration = campaign.repo, time.monotonic(), campaign.seconds
    reference = _digests(repo)
    metrics = (repo / "metrics/baseline.json").read_bytes()
    assert any(k.startswith("models/baseline/fold-1/") for k in reference)
    rng, kills, notes = random.Random(24), [], []
    fold0 = repo / "checkpoints/baseline/fold-0"
    for fault, where in SITES:  # chain 1: each run resumes the last one
        _kill_inside(repo, fault)
        if fault.startswith("torch:save"):  # killed writing: the 1st checkpoint stays, the
            assert (fold0 / "checkpoint.pt").is_file()  # 2nd is an empty temporary file
            assert [p.stat().st_size for p in fold0.glob(".checkpoint.pt.*.tmp")] == [0]
        kills.append(where)
        notes.append(_repair_and_check(repo))
    run([sys.executable, "-m", *TRAIN], repo)
    _same(repo, reference, f"after kills {kills}")
    chain: list[float] = []  # chain 2: the whole command at random moments
    while len(chain) < RANDOM_KILLS:
        when = round(rng.uniform(0.05, 0.95) * duration, 1)
        if _kill_at(repo, when):  # else it finished first: a completed rerun, also fine
            chain.append(when)
        notes.append(_repair_and_check(repo))
    kills += [f"at {t} s" for t in chain]
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
    _kill_inside(repo, f"{SAVE}:1")
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
