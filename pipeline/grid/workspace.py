"""What runs on a compute node: a fresh workspace per job, one DVC cache for all of them.

Each job clones the repository at the grid's base commit into `<workdir>/ws/<name>`
(a local clone: git hard-links its objects), points `cache.dir` at the repository's own
cache with `cache.shared = group` (outputs are links into that cache, per the project's
`cache.type`), and gives the clone the repository's git remotes (its `origin`, which runs
record, and the one the experiments go to) and DVC remote. An array task then
runs `dvc exp run` of its experiment and pushes it: first its outputs (`dvc push`), then
`dvc exp push`, whose git ref is the signal that the experiment is done, so a ref on the
remote always has its outputs there. The data job runs the stages every experiment shares
once, so that the tasks restore them from DVC's run-cache instead of running them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from pipeline.errors import PipelineError

log = logging.getLogger(__name__)


class TaskError(PipelineError):
    """A git or DVC command of a grid job failed (its output is in the job's log)."""


@dataclasses.dataclass(frozen=True)
class Submission:
    """What one `submit` sent: the repository and where its experiments go, the data job's
    override sets and stages, and the experiments of the array (index = array task id)."""

    number: int
    grid: str
    repo: str
    base: str
    workdir: str
    cache_dir: str
    git_remote: str
    git_url: str
    origin: str | None
    identity: dict[str, str]
    dvc_remote: str
    dvc_url: str
    shared_stages: list[str]
    prepare_sets: list[list[str]]
    experiments: list[dict[str, Any]]
    jobs: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def path(self) -> Path:
        return Path(self.workdir) / "submissions" / f"{self.number}.json"

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(dataclasses.asdict(self), indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.path)

    @classmethod
    def read(cls, path: Path) -> Submission:
        return cls(**json.loads(path.read_text(encoding="utf-8")))


def _env() -> dict[str, str]:
    env = dict(os.environ, DVC_NO_ANALYTICS="1", GIT_TERMINAL_PROMPT="0")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def call(cmd: list[str], cwd: Path, capture: bool = False) -> str:
    """Run `cmd` in `cwd` (output to this job's log unless `capture`); its stdout."""
    log.info("$ %s", " ".join(cmd))
    proc = subprocess.run(cmd, cwd=cwd, env=_env(), text=True, check=False,
                          capture_output=capture)  # fmt: skip
    if proc.returncode != 0:
        detail = f": {proc.stderr.strip()}" if capture else " (its output is above)"
        raise TaskError(f"`{' '.join(cmd)}` failed in {cwd} with exit {proc.returncode}{detail}")
    return proc.stdout or ""


def dvc(*args: str) -> list[str]:
    return [sys.executable, "-m", "dvc", *args]


def workspace(sub: Submission, name: str) -> Path:
    """A fresh clone of the repository at the base commit, on the shared cache and remotes
    (a killed job's leftover workspace of the same name is removed first)."""
    ws = Path(sub.workdir) / "ws" / name
    if ws.exists():
        log.info("removing the workspace a stopped job left: %s", ws)
        shutil.rmtree(ws)
    ws.parent.mkdir(parents=True, exist_ok=True)
    call(["git", "clone", "--quiet", "--no-checkout", sub.repo, str(ws)], ws.parent)
    call(["git", "checkout", "--quiet", "--detach", sub.base], ws)
    # the repository's own `origin` (runs record it: pipeline/provenance.py), then the remote
    # the experiments go to
    call(["git", "remote", "remove", "origin"], ws)
    remotes = {"origin": sub.origin} if sub.origin else {}
    for name, url in {**remotes, sub.git_remote: sub.git_url}.items():
        call(["git", "remote", "add", name, url], ws)
    for key, value in sub.identity.items():  # the experiments' commits: the submitter's name
        call(["git", "config", key, value], ws)
    local = Path(sub.repo) / ".dvc" / "config.local"
    if local.is_file():
        shutil.copy(local, ws / ".dvc" / "config.local")
    from dvc.config import Config

    with Config(dvc_dir=str(ws / ".dvc")).edit("local") as conf:
        conf["cache"].update(dir=sub.cache_dir, shared="group")
        conf["remote"][sub.dvc_remote] = {**conf["remote"].get(sub.dvc_remote, {}),
                                          "url": sub.dvc_url}  # fmt: skip
    log.info("workspace %s: cache %s (shared), remotes %s and %r", ws, sub.cache_dir,
             sub.git_url, sub.dvc_url)  # fmt: skip
    return ws


def prepare(sub: Submission) -> None:
    """The data job: the shared stages once per distinct set of the overrides they read."""
    ws = workspace(sub, f"_prepare-{sub.number}")
    for i, overrides in enumerate(sub.prepare_sets):
        log.info("data stages, set %d of %d: %s", i + 1, len(sub.prepare_sets), overrides or "-")
        call(["git", "reset", "--quiet", "--hard", sub.base], ws)
        sets = [a for o in overrides for a in ("-S", o)]
        call(dvc("exp", "run", *sets, *sub.shared_stages), ws)
    shutil.rmtree(ws)
    log.info("data stages ready in the shared cache (%s)", sub.cache_dir)


def run_task(sub: Submission, index: int) -> None:
    """Array task `index`: run its experiment and push it to the git and DVC remotes."""
    exp = sub.experiments[index]
    name = exp["name"]
    log.info("experiment %s (task %d of submission %d)", name, index, sub.number)
    ws = workspace(sub, name)
    call(dvc(*exp["run_args"]), ws)
    call(dvc("push", "--quiet", "--with-deps", "-r", sub.dvc_remote, *exp["targets"]), ws)
    call(dvc("exp", "push", "--no-cache", sub.git_remote, name), ws)
    shutil.rmtree(ws)
    log.info("experiment %s pushed to %s and DVC remote %r", name, sub.git_url, sub.dvc_remote)
