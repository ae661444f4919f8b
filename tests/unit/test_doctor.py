"""`python -m pipeline.doctor` on a three-stage toy DVC repository: each damaged file is found,
repaired, and DVC reads the repository again. The same states made by real killed DVC
processes on the tiny profile: tests/robustness/test_doctor.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import doctor
from tests.stages.conftest import run

pytestmark = pytest.mark.slow  # a real (tiny) dvc repro

DVC_YAML = """\
stages:
  a:
    cmd: python -c "open('a.txt', 'w').write('a')"
    outs:
      - a.txt
  b:
    cmd: python -c "open('b.txt', 'w').write(open('a.txt').read() * 2)"
    deps:
      - a.txt
    params:
      - x
    outs:
      - b.txt
  train:
    foreach:
      - m
    do:
      cmd: python -c "open('c.txt', 'w').write(open('b.txt').read())"
      deps:
        - b.txt
      outs:
        - c.txt
"""


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("toy") / "repo"
    repo.mkdir()
    (repo / "dvc.yaml").write_text(DVC_YAML)
    (repo / "params.yaml").write_text("x: 1\n")
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@example.org"],
                ["git", "config", "user.name", "t"], [sys.executable, "-m", "dvc", "init", "-q"],
                [sys.executable, "-m", "dvc", "config", "core.analytics", "false"],
                [sys.executable, "-m", "dvc", "repro", "-q"], ["git", "add", "-A"],
                ["git", "commit", "-qm", "repro"]):  # fmt: skip
        run(cmd, repo)
    return repo


@pytest.fixture()
def repo(toy: Path, tmp_path: Path) -> Iterator[Path]:
    copy = tmp_path / "repo"
    shutil.copytree(toy, copy, symlinks=True)
    yield copy


def _dvc(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "dvc", *args], repo, check=False)


def _doctor(repo: Path, *args: str) -> tuple[int, str]:
    proc = run([sys.executable, "-m", "pipeline.doctor", "--repo", str(repo), *args],
               Path(__file__).resolve().parents[2], check=False)  # fmt: skip
    return proc.returncode, proc.stdout


@pytest.mark.parametrize(
    ("text", "state"),
    [("", "is empty"), ('{"read": {"a.txt": [{"pid": 12', "is cut"),
     ('{"write": {"a.txt": 3}}', "is not in DVC's format")],
    ids=["empty", "cut", "format"],
)  # fmt: skip
def test_a_damaged_rwlock_is_found_and_deleted(repo: Path, text: str, state: str) -> None:
    (repo / ".dvc/tmp/rwlock").write_text(text)
    assert _dvc(repo, "status").returncode != 0  # DVC cannot go on
    code, out = _doctor(repo)
    assert code == 1 and f".dvc/tmp/rwlock {state}" in out and "--fix" in out, out
    assert (repo / ".dvc/tmp/rwlock").read_text() == text  # the report changes nothing
    code, out = _doctor(repo, "--fix")
    assert code == 0 and out.startswith("FIXED  .dvc/tmp/rwlock")
    assert not (repo / ".dvc/tmp/rwlock").exists()
    assert "up to date" in _dvc(repo, "status").stdout


def _cut_at(repo: Path, where: str) -> None:
    lock = (repo / "dvc.lock").read_text()
    cut = {
        "empty": 0,
        "mid-value": lock.index("md5:", lock.index("  b:")) + 9,  # inside b's first hash
        "line-end": lock.index("\n", lock.index("path: b.txt")) + 1,  # valid YAML: b lacks outs
        "between": lock.index("  train@m:"),  # valid YAML: train@m lost
    }[where]
    (repo / "dvc.lock").write_text(lock[:cut])


@pytest.mark.parametrize("where", ["empty", "mid-value", "line-end", "between"])
def test_a_cut_dvc_lock_is_rebuilt_from_its_complete_entries_and_git(
    repo: Path, where: str
) -> None:
    before = (repo / "dvc.lock").read_bytes()
    _cut_at(repo, where)
    code, out = _doctor(repo)
    assert code == 1 and "FOUND  dvc.lock is " in out
    code, out = _doctor(repo, "--fix")
    assert code == 0 and "FIXED  dvc.lock" in out
    assert (repo / "dvc.lock").read_bytes() == before  # DVC's own formatting, same order
    assert "up to date" in _dvc(repo, "status").stdout


def test_a_cut_dvc_lock_never_committed_keeps_the_complete_entries(repo: Path) -> None:
    run(["git", "rm", "-q", "--cached", "dvc.lock"], repo)
    run(["git", "commit", "-qm", "dvc.lock not tracked"], repo)
    _cut_at(repo, "line-end")  # a and the start of b survive
    code, out = _doctor(repo, "--fix")
    assert code == 0 and "keep its 1 complete entries" in out, out
    status = _dvc(repo, "status").stdout
    assert "b:" in status and "train@m:" in status and "a:" not in status.split("b:")[0]
    assert _dvc(repo, "repro").returncode == 0
    assert (repo / "c.txt").read_text() == "aa"


def test_checkpoints_stale_when_the_stage_is_up_to_date_kept_when_it_will_run(
    repo: Path,
) -> None:
    folder = repo / "checkpoints/m/fold-0"
    folder.mkdir(parents=True)
    (folder / "checkpoint.pt").write_bytes(b"state")
    (folder / ".checkpoint.pt.1a2b3c4d.tmp").write_bytes(b"half")
    (repo / "checkpoints/gone/fold-0").mkdir(parents=True)  # a method no longer in dvc.yaml
    code, out = _doctor(repo)
    assert code == 1, out
    assert "checkpoints/m: stale checkpoints (train@m is up to date" in out
    assert "checkpoints/gone: stale checkpoints (no stage train@gone" in out
    assert _doctor(repo, "--fix")[0] == 0 and not (repo / "checkpoints").exists()
    # the stage will run (its input changed): its checkpoint is resumable and kept, the
    # unfinished temporary file of the killed writer is not
    folder.mkdir(parents=True)
    (folder / "checkpoint.pt").write_bytes(b"state")
    (folder / ".checkpoint.pt.1a2b3c4d.tmp").write_bytes(b"half")
    (repo / "b.txt").unlink()
    (repo / "b.txt").write_text("changed")
    code, out = _doctor(repo, "--fix")
    assert code == 0 and "OK     checkpoints/m: resumable checkpoints (fold-0)" in out, out
    assert "1 unfinished checkpoint files" in out
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint.pt"]


def test_the_train_stage_sweeps_only_other_methods_stale_checkpoints(repo: Path) -> None:
    for method in ("m", "other"):
        (repo / "checkpoints" / method / "fold-0").mkdir(parents=True)
    doctor.sweep_checkpoints(keep="other", root=repo)
    assert sorted(p.name for p in (repo / "checkpoints").iterdir()) == ["other"]
    doctor.sweep_checkpoints(keep="other", root=repo)  # nothing else: quiet, no DVC call


def test_nothing_is_checked_or_changed_while_dvc_runs(repo: Path, tmp_path: Path) -> None:
    (repo / ".dvc/tmp/rwlock").write_text("")
    fake = tmp_path / "bin" / "dvc"  # stands for a running `dvc repro`
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    proc = subprocess.Popen([str(fake), "repro"], cwd=repo)
    try:
        deadline = time.monotonic() + 30
        while not doctor.dvc_processes(repo.resolve()) and time.monotonic() < deadline:
            time.sleep(0.1)
        code, out = _doctor(repo, "--fix")
    finally:
        proc.kill()
        proc.wait()
    assert code == 2 and "DVC is running" in out and f"{proc.pid}: " in out
    assert (repo / ".dvc/tmp/rwlock").exists()  # left alone
    assert os.path.getsize(repo / ".dvc/tmp/rwlock") == 0
