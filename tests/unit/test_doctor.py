"""`python -m pipeline.doctor` on a three-stage toy DVC repository: each damaged file is found,
repaired, and DVC reads the repository again. The same states made by real killed DVC
processes on the tiny profile: tests/robustness/test_doctor.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import doctor, doctor_checkpoints
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
    _checkpoint(folder / "checkpoint.pt")
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
    _checkpoint(folder / "checkpoint.pt")
    (folder / ".checkpoint.pt.1a2b3c4d.tmp").write_bytes(b"half")
    (repo / "b.txt").unlink()
    (repo / "b.txt").write_text("changed")
    code, out = _doctor(repo, "--fix")
    assert code == 0 and "OK     checkpoints/m: resumable checkpoints (fold-0)" in out, out
    assert "1 unfinished checkpoint files" in out
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint.pt"]


def _checkpoint(path: Path) -> None:
    """A complete checkpoint file as `torch.save` writes it: a zip archive."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("checkpoint/data.pkl", b"state")


@pytest.mark.parametrize("leftover", ["empty", "tmp-only", "unreadable"])
def test_no_resume_is_promised_without_a_usable_checkpoint(repo: Path, leftover: str) -> None:
    """A stage that will run, whose checkpoint folder holds no complete checkpoint (a kill
    before the first save finished): the doctor says it trains from its first step."""
    folder = repo / "checkpoints/m/fold-0"
    folder.mkdir(parents=True)
    if leftover == "tmp-only":
        (folder / ".checkpoint.pt.1a2b3c4d.tmp").write_bytes(b"half")
    if leftover == "unreadable":
        (folder / "checkpoint.pt").write_bytes(b"not a zip archive")
    (repo / "b.txt").unlink()
    (repo / "b.txt").write_text("changed")  # train@m will run
    code, out = _doctor(repo)
    held = {"empty": "nothing", "tmp-only": "1 unfinished .tmp files of a killed writer",
            "unreadable": "1 unreadable checkpoint.pt"}[leftover]  # fmt: skip
    assert code == 1 and "resumes" not in out, out
    assert (f"FOUND  checkpoints/m: no usable checkpoint (it holds {held}), so the next `dvc "
            "repro` trains train@m from its first step") in out, out  # fmt: skip
    assert _doctor(repo, "--fix")[0] == 0 and not (repo / "checkpoints").exists()


def test_an_rwlock_held_by_a_live_process_that_is_not_dvc_is_found_and_cleared(
    repo: Path,
) -> None:
    """DVC was killed and its PID reused (issue 32: every dvc command said `is busy … (PID
    1)`): DVC removes the entries of dead PIDs itself, never those of live ones."""
    other = subprocess.Popen(["sleep", "60"])  # a live process that is not DVC
    try:
        lock = {"write": {str(repo / "a.txt"): {"pid": other.pid, "cmd": "dvc repro"}}}
        (repo / ".dvc/tmp/rwlock").write_text(json.dumps(lock))
        blocked = _dvc(repo, "repro", "-f", "a")
        assert blocked.returncode != 0 and f"(PID {other.pid}): dvc repro" in blocked.stderr
        code, out = _doctor(repo)
        assert code == 1 and (f"FOUND  .dvc/tmp/rwlock holds locks of PID {other.pid} (now "
                              "`sleep 60`), not a DVC command of this repository") in out, out
        code, out = _doctor(repo, "--fix")
        assert code == 0 and "FIXED  .dvc/tmp/rwlock holds locks" in out, out
        assert _dvc(repo, "repro", "-f", "a").returncode == 0
        assert _doctor(repo)[0] == 0
    finally:
        other.kill()
        other.wait()


def test_partial_cache_files_and_an_output_not_in_the_cache_are_repaired(repo: Path) -> None:
    """What a copy into a full cache leaves (tests/robustness/test_refusals.py makes it with
    a real failing `dvc repro`): partial `.tmp` files, and an output in the workspace that
    dvc.lock records but the cache lacks (DVC: `not in cache`)."""
    lock = (repo / "dvc.lock").read_text()
    md5 = lock.split("path: a.txt", 1)[1].split("md5: ", 1)[1].split()[0]
    cache = repo / ".dvc/cache/files/md5"
    (cache / md5[:2] / md5[2:]).unlink()
    (cache / md5[:2] / ".aB3dE5fG7hI9jK1lM3nO5p.tmp").write_bytes(b"\0" * 512)
    assert "not in cache:       a.txt" in _dvc(repo, "status").stdout
    code, out = _doctor(repo)
    assert code == 1, out
    assert "FOUND  .dvc/cache: 1 partial files (512 B) of copies into the DVC cache" in out
    assert "FOUND  a.txt (output of a) is not in the DVC cache: copying it there failed" in out
    code, out = _doctor(repo, "--fix")
    assert code == 0 and out.count("FIXED") == 2, out
    assert (cache / md5[:2] / md5[2:]).read_text() == "a"
    assert not list(cache.rglob("*.tmp")) and (repo / "dvc.lock").read_text() == lock
    assert "up to date" in _dvc(repo, "status").stdout and _doctor(repo)[0] == 0


def test_temporary_workspaces_of_killed_queued_experiments_are_deleted(repo: Path) -> None:
    left = repo / ".dvc/tmp/exps/tmpa1b2c3d4"
    (left / "models").mkdir(parents=True)
    (left / "models/weights.bin").write_bytes(b"\0" * 2048)
    code, out = _doctor(repo)
    assert code == 1 and ("FOUND  .dvc/tmp/exps: 1 temporary workspaces of queued experiments "
                          "(2.0 KiB) that no process uses") in out, out  # fmt: skip
    assert _doctor(repo, "--fix")[0] == 0 and not left.exists()
    assert (repo / ".dvc/tmp/exps").is_dir()  # DVC's own folder stays


def test_the_train_stage_sweeps_only_other_methods_stale_checkpoints(repo: Path) -> None:
    for method in ("m", "other"):
        (repo / "checkpoints" / method / "fold-0").mkdir(parents=True)
    doctor_checkpoints.sweep_checkpoints(keep="other", root=repo)
    assert sorted(p.name for p in (repo / "checkpoints").iterdir()) == ["other"]
    # nothing else: quiet, no DVC call
    doctor_checkpoints.sweep_checkpoints(keep="other", root=repo)


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
