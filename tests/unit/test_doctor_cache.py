"""A workspace output changed in place, which hard links carry into the DVC cache: DVC takes
the changed bytes for the recorded ones (`dvc status` up to date, `dvc repro -f -s` relinks
them); `python -m pipeline.doctor` finds the object whose bytes do not match its md5 and
`--fix` brings back the original bytes (pipeline/doctor_cache.py). A real DVC repository in
tmp_path, the `dvc` of the virtual environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import doctor_cache
from tests.stages.conftest import run

pytestmark = pytest.mark.slow  # a real (tiny) dvc repro

ROOT = Path(__file__).resolve().parents[2]
DVC_YAML = """\
stages:
  make:
    cmd: python -c "open('out.txt', 'w').write('line of the recorded output\\n' * 100)"
    outs:
      - out.txt
  folder:
    cmd: python -c "import os; os.makedirs('d', exist_ok=True); [open(f'd/{i}.txt', 'w').write(str(i) * 500) for i in range(3)]"
    outs:
      - d
"""  # noqa: E501


def _dvc(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "dvc", *args], repo, check=False)


def _doctor(repo: Path, *args: str) -> tuple[int, str]:
    proc = run([sys.executable, "-m", "pipeline.doctor", "--repo", str(repo), *args], ROOT,
               check=False)  # fmt: skip
    return proc.returncode, proc.stdout


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "dvc.yaml").write_text(DVC_YAML)
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@example.org"],
                ["git", "config", "user.name", "t"], [sys.executable, "-m", "dvc", "init", "-q"],
                [sys.executable, "-m", "dvc", "config", "core.analytics", "false"],
                [sys.executable, "-m", "dvc", "config", "cache.type", "hardlink"],
                [sys.executable, "-m", "dvc", "repro", "-q"], ["git", "add", "-A"],
                ["git", "commit", "-qm", "repro"]):  # fmt: skip
        run(cmd, repo)
    return repo


@pytest.mark.parametrize("output", ["out.txt", "d/1.txt"], ids=["file", "file-of-a-folder"])
def test_an_output_truncated_in_place_is_found_and_its_original_bytes_restored(
    repo: Path, output: str
) -> None:
    target = repo / output
    original, lock = target.read_bytes(), (repo / "dvc.lock").read_text()
    assert target.stat().st_nlink == 2  # the workspace file is its cache object
    os.truncate(target, 100)  # `truncate -s 100`, in place: the cache object changes too
    stage = "make" if output == "out.txt" else "folder"
    assert _dvc(repo, "repro").returncode == 0  # the rerun's output is linked to the bad object
    assert "up to date" in _dvc(repo, "status").stdout  # the fault: DVC sees nothing
    assert _dvc(repo, "repro", "-f", "-s", stage).returncode == 0
    assert len(target.read_bytes()) == 100  # DVC's own forced rerun keeps the corrupt bytes

    code, out = _doctor(repo)
    assert code == 1, out
    path = output.split("/")[0]
    assert f"FOUND  {path} (output of {stage}): its DVC cache object .dvc/cache/files/md5/" in out
    assert "no longer matches its md5" in out and f"`dvc repro -f -s {stage}`" in out, out
    code, out = _doctor(repo, "--fix")
    assert code == 0 and f"RAN    dvc repro -f -s {stage}: done" in out, out
    assert target.read_bytes() == original
    assert (repo / "dvc.lock").read_text() == lock
    assert "up to date" in _dvc(repo, "status").stdout
    assert not doctor_cache.corrupt(repo) and _doctor(repo)[0] == 0


def test_a_cache_that_matches_is_read_once_and_reports_nothing(repo: Path) -> None:
    assert doctor_cache.corrupt(repo) == []
    (repo / "dvc.lock").unlink()
    assert doctor_cache.corrupt(repo) == []  # nothing recorded, nothing to check
