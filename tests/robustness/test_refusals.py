"""Nothing lost, nothing partial (issue 32), on copies of the tiny profile:

- a refused `dvc exp run -S` (a value out of range, an unknown section) stops at the first
  stage, `params`: every output, the git-tracked DVCLive files and dvc.lock keep their bytes,
  and git sees only the value DVC wrote into params.yaml;
- a valid change invalidates only the stages that read it: the `params` stage rewrites the
  same bytes, so nothing downstream of it reruns for its sake;
- a deleted shipped file stops `dvc repro` at `extract`, and the fix it names works;
- a cache that cannot take an output (ENOSPC while DVC copies it there: DVC 3.67 logs
  `failed to transfer` and goes on) makes the run fail at the next stage, and the doctor
  repairs it.

The full cache is injected (tests/robustness/faults, `full`): copies into the cache of files
over 4 KiB fail as on a nearly full disk, as a 3 MB tmpfs did in the issue.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.robustness.faulty import env

pytestmark = pytest.mark.slow

OUTPUTS = ("data", "models", "runs", "eval", "metrics", "plots", "dvclive")


def _digests(repo: Path) -> dict[str, str]:
    files = [p for name in OUTPUTS for p in sorted((repo / name).rglob("*")) if p.is_file()]
    files.append(repo / "dvc.lock")
    return {str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _call(repo: Path, *argv: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=repo, env=env(fault),
                          capture_output=True, text=True, timeout=900)  # fmt: skip


@pytest.fixture()
def repo(tiny_repo: Path, tmp_path: Path) -> Path:
    """A copy of the tiny profile with its workspace back at HEAD (other tests run
    experiments in the session's copy)."""
    copy = tmp_path / "repo"
    shutil.copytree(tiny_repo, copy, symlinks=True)
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD"], cwd=copy, check=True)
    # and without their scratch files (`dvc plots show` writes dvc_plots/; found by a run of
    # the suite in a random order: tests/reorder.py)
    subprocess.run(["git", "clean", "-q", "-fd"], cwd=copy, check=True)
    assert _call(copy, "dvc", "checkout", "-f", "-q").returncode == 0
    return copy


def _ran(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return re.findall(r"Running stage '([^']+)'", proc.stdout + proc.stderr)


@pytest.mark.parametrize(
    ("override", "words"),
    [("train.lr=-0.001", r"params key 'train\.lr': -0\.001 is out of range"),
     ("+trian.lr=0.1", r"params key 'trian' is unknown; .*did you mean 'train'\?"),
     ("+bogus.x=1", r"params key 'bogus' is unknown; known sections"),
     ("dataset.grep_biasir.folds=500", r"params key 'dataset\.grep_biasir\.folds': 500 folds "
      r"need at least 500 queries, and there are 8 .*set folds to 1\.\.8")],
    ids=["out-of-range", "misspelt-section", "unknown-section", "folds-over-the-data"],
)  # fmt: skip
def test_a_refused_parameter_stops_before_any_output_is_touched(
    repo: Path, override: str, words: str
) -> None:
    before = _digests(repo)
    experiments = _call(repo, "dvc", "exp", "list", "--name-only").stdout
    proc = _call(repo, "dvc", "exp", "run", "-S", override)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    errors = [x for x in proc.stderr.splitlines() if "ERROR stages:" in x]
    assert len(errors) == 1 and re.search(words, errors[0]), proc.stderr
    assert "No stage ran and no output was touched" in errors[0]
    assert _ran(proc) == ["params"]
    assert _digests(repo) == before  # outputs, DVCLive's git-tracked files, dvc.lock
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert status == " M params.yaml\n"  # DVC leaves the -S value there, nothing else
    assert _call(repo, "dvc", "exp", "list", "--name-only").stdout == experiments  # none new


def test_a_valid_change_invalidates_only_the_stages_that_read_it(repo: Path) -> None:
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["train"]["lr"] = 5e-4
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    methods = sorted(params["methods"])
    changed = yaml.safe_load(_call(repo, "dvc", "status", "--json").stdout)
    # every stage depends on its params slice, which the `params` stage writes (issue 42):
    # before it runs, `dvc status` names it alone
    assert sorted(changed) == ["params"]
    # train@ reads `train.lr`; evaluate@ records its digest in each metrics file (`profile`),
    # that of every `post:` entry over a trained method too (their post@ stages do not read it)
    readers = [f"{s}@{m}" for s in ("train", "evaluate") for m in methods]
    readers += [f"evaluate@{e}" for e, p in (params.get("post") or {}).items()
                if p["base"] != "zero-shot"]  # fmt: skip
    ok = (repo / "data/params.ok").read_bytes()
    assert _call(repo, "dvc", "repro", "-s", "params").returncode == 0
    assert (repo / "data/params.ok").read_bytes() == ok  # the same bytes: nothing else reruns
    changed = yaml.safe_load(_call(repo, "dvc", "status", "--json").stdout)
    assert sorted(changed) == sorted(readers)


def test_a_deleted_shipped_file_stops_the_run_at_extract(repo: Path) -> None:
    before = _digests(repo)
    shipped = "pipeline/resources/grep_biasir/queries-documents_Career.csv"
    (repo / shipped).unlink()
    proc = _call(repo, "dvc", "repro")
    # `params` (whose generated deps hold the shipped folder its modules name) passes; extract stops
    assert proc.returncode != 0 and _ran(proc) == ["params", "extract"], proc.stdout + proc.stderr
    errors = [x for x in proc.stderr.splitlines() if "ERROR stages:" in x]
    assert len(errors) == 1 and (
        f"ERROR stages: {shipped} is missing (shipped: 39092 bytes, 120 data rows): the "
        "Grep-BiasIR collection differs from the shipped one (manifest.json); nothing was "
        f"read. Fix: restore it: `git checkout -- '{shipped}'`"
    ) in errors[0], proc.stderr
    subprocess.run(["git", "checkout", "--", shipped], cwd=repo, check=True)  # the fix named
    assert _call(repo, "dvc", "repro").returncode == 0
    assert _digests(repo) == before


def test_a_full_cache_makes_the_run_fail_and_the_doctor_repairs_it(repo: Path) -> None:
    """DVC cannot copy `data/transfer` (a directory) into its full cache: it logs `failed to
    transfer`, records the output in dvc.lock and goes on (exit 0 by itself); the next stage
    stops the run. The doctor deletes the partial copies and copies the output again."""
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["dataset"]["genderbias_qa"]["splits"] = ["test", "train"]  # transfer_data: new files
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    # extract reads only the training source's section (issue 42): it does not rerun
    assert _ran(_call(repo, "dvc", "repro", "extract")) == ["params"]
    proc = _call(repo, "dvc", "repro", "features", fault="dvc_objects.fs.utils:copyfile:full")
    assert proc.returncode != 0 and _ran(proc) == ["transfer_data", "features"]
    assert "failed to transfer" in proc.stderr and "No space left on device" in proc.stderr
    errors = [x for x in proc.stderr.splitlines() if "ERROR stages:" in x]
    assert len(errors) == 1 and errors[0].split("ERROR stages: ")[1].startswith(
        "data/transfer (output of transfer_data) is not in the DVC cache, so a later `dvc "
        "checkout` would lose it: DVC could not copy it there"
    ), proc.stderr
    assert "python -m pipeline.doctor --fix" in errors[0]

    report = _call(repo, "pipeline.doctor")
    assert report.returncode == 1, report.stdout + report.stderr
    assert re.search(r"FOUND  \.dvc/cache: \d+ partial files \(.*\) of copies into the DVC "
                     r"cache that failed", report.stdout), report.stdout  # fmt: skip
    assert "FOUND  data/transfer (output of transfer_data) is not in the DVC cache" in (
        report.stdout
    )
    fix = _call(repo, "pipeline.doctor", "--fix")
    assert fix.returncode == 0 and fix.stdout.count("FIXED") == 2, fix.stdout + fix.stderr
    assert not list((repo / ".dvc/cache").rglob("*.tmp"))
    assert "transfer_data" not in _call(repo, "dvc", "status", "transfer_data").stdout
    again = _call(repo, "pipeline.doctor")
    assert again.returncode == 0 and "nothing to repair" in again.stdout, again.stdout
