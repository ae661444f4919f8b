"""Every documented command that needs the default run's outputs or runs an experiment, run
as written on the tiny profile (pipeline/report/doc_tiny.py, `TINY_PROFILE`).

The mapping, stated once: the tiny reproduction (tests/data/params_tiny.yaml: 8 Grep-BiasIR
queries, a random 2-layer BERT, 3 training steps) stands for the default run, with
`train.seeds: [1]` (so the default's `seed-1/` paths exist), the default's `score.tokenizer`
(`fair-eval`'s default) and as methods exactly those the blocks name (the tiny profile's
entry where it has one, else the default's: `penalty_relevant`). Each file's blocks run in
document order in one copy of that reproduction, the workspace reset to its commit before
each block; a block marked
`offline=REGEX` needs the network, runs with every connection blocked and must stop with
output matching REGEX, after which the `recover` block (docs/troubleshooting.md) must
bring `params.yaml`,
`git status` and `dvc status` back to the commit. Blocks that only read the committed repo
(`exec`) are run by tests/unit/test_docs.py; the ones a named test runs, by that test
(`tested-by`).
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.data.irds import DOWNLOAD_HOSTS as IRDS_HOSTS
from pipeline.report import doc_tiny, docs
from tests.conftest import NoNetwork
from tests.stages.conftest import ROOT, run

pytestmark = pytest.mark.slow
FILES = [p for p in docs.doc_files(ROOT) if any(doc_tiny.runs_on_tiny(b) for b in docs.parse(p))]
BLOCKS = [b for p in FILES for b in docs.parse(p) if doc_tiny.runs_on_tiny(b)]
DOWNLOAD_HOSTS = tuple(IRDS_HOSTS.values())  # the offline blocks probe these, nothing else
log = logging.getLogger(__name__)


def _dvc(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "dvc", *args], repo, check=check)


@pytest.fixture(scope="module")
def docs_repo(tiny_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny reproduction with `TINY_PROFILE`'s changes, reproduced and committed."""
    repo = tmp_path_factory.mktemp("docs") / "repo"
    shutil.copytree(tiny_repo, repo, symlinks=True)
    run(["git", "reset", "-q", "--hard", "HEAD"], repo)  # other tests change its workspace
    run(["git", "clean", "-q", "-fd"], repo)  # (e.g. `dvc plots show` wrote dvc_plots/)
    _dvc(repo, "checkout", "-q", "--force")
    tiny: dict[str, Any] = yaml.safe_load((repo / "params.yaml").read_text())
    default: dict[str, Any] = yaml.safe_load((ROOT / "params.yaml").read_text())
    params = doc_tiny.tiny_params(tiny, default, BLOCKS)
    params["score"] = {**params["score"], "tokenizer": default["score"]["tokenizer"]}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run([sys.executable, "-m", "pipeline.deps", "--write"], repo)  # the kept methods' stages
    _dvc(repo, "repro", "-q")
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "the docs' tiny profile"], repo)
    return repo


def _reset(repo: Path) -> None:
    """Back to the commit: params.yaml re-read by git (a failed experiment hides its change
    from git's index), tracked files and DVC outputs as committed, scratch files removed."""
    (repo / "params.yaml").touch()
    run(["git", "checkout", "-q", "--", "."], repo)
    _dvc(repo, "checkout", "-q", "--force")
    for scratch in ("dvc_plots", "plots/sweeps"):
        shutil.rmtree(repo / scratch, ignore_errors=True)
    (repo / "exps.json").unlink(missing_ok=True)


def _committed(repo: Path) -> list[str]:
    """What differs from the commit: params.yaml's bytes, git status, dvc status."""
    problems = []
    head = run(["git", "show", "HEAD:params.yaml"], repo).stdout
    if (repo / "params.yaml").read_text() != head:
        problems.append("params.yaml differs from the commit")
    status = run(["git", "status", "--porcelain"], repo).stdout.strip()
    if status:
        problems.append(f"git status: {status}")
    dvc_status = _dvc(repo, "status").stdout
    if "up to date" not in dvc_status:
        problems.append(f"dvc status: {dvc_status[:1000]}")
    return problems


def _expected_probes(no_network: NoNetwork, block: docs.Block) -> None:
    """An offline block probes its download host, nothing else; the probes are cleared."""
    tried = no_network.attempts + no_network.logged()
    assert all(any(h in line for h in DOWNLOAD_HOSTS) for line in tried), (block.where, tried)
    no_network.attempts.clear()
    no_network.log.unlink(missing_ok=True)


def test_documented_commands_run_on_the_tiny_profile(
    docs_repo: Path, tmp_path: Path, no_network: NoNetwork
) -> None:
    recover = next(b for f in docs.doc_files(ROOT) for b in docs.parse(f)
                   if b.name == doc_tiny.RECOVER)  # docs/troubleshooting.md  # fmt: skip
    timings: list[str] = []
    # a user's empty ir_datasets cache, not the session's, where other tests plant miniature
    # files (with them, an offline block's extract succeeded: an order dependency)
    env = {**no_network.env, "IR_DATASETS_HOME": str(tmp_path / "ir_datasets-empty")}
    for path in FILES:
        repo = tmp_path / path.stem
        shutil.copytree(docs_repo, repo, symlinks=True)
        sandbox = tmp_path / f"{path.stem}-tmp"
        sandbox.mkdir()
        for block in (b for b in docs.parse(path) if doc_tiny.runs_on_tiny(b)):
            _reset(repo)
            start = time.perf_counter()
            proc = docs.execute(block, sandbox, repo, env=env)
            timings.append(f"{block.where} {time.perf_counter() - start:.0f} s")
            output = proc.stdout + proc.stderr
            offline = block.options.get("offline")
            if offline is None:
                assert proc.returncode == 0, f"{block.where} failed:\n{output[-4000:]}"
                continue
            assert proc.returncode != 0, f"{block.where} should stop offline:\n{output[-2000:]}"
            assert re.search(offline, output), f"{block.where}: no {offline!r}:\n{output[-3000:]}"
            _expected_probes(no_network, block)
            fixed = docs.execute(recover, sandbox, repo, env=env)
            assert fixed.returncode == 0, fixed.stderr[-2000:]
            assert _committed(repo) == [], f"after {block.where} and the README's recovery"
    log.info("seconds per block:\n%s", "\n".join(timings))  # --log-cli-level=INFO shows them


def test_the_mapping_adds_only_what_the_blocks_name() -> None:
    tiny = yaml.safe_load((ROOT / "tests" / "data" / "params_tiny.yaml").read_text())
    default = yaml.safe_load((ROOT / "params.yaml").read_text())
    tiny = {**default, **tiny, "train": {**default["train"], **tiny["train"]}}
    params = doc_tiny.tiny_params(tiny, default, BLOCKS)
    assert params["train"]["seeds"] == [1] and params["model"] == tiny["model"]
    named = doc_tiny.named_methods(BLOCKS, list(default["methods"]))
    assert list(params["methods"]) == named and named[0] == "baseline"
    assert params["methods"]["penalty_irrelevant"] == tiny["methods"]["penalty_irrelevant"]
    assert params["methods"]["penalty_relevant"] == default["methods"]["penalty_relevant"]
    assert "curriculum_high_low" not in params["methods"]  # no block names it
