"""A queued experiment that finished after its worker was killed (a check of ``pipeline.doctor``).

``dvc queue start`` runs each experiment as ``dvc exp exec-run`` in a temporary workspace
(``.dvc/tmp/exps/tmp*``, a git clone of the repository sharing its DVC cache), a child of the
queue worker in the worker's process group. When only the worker dies (an OOM kill of the
worker, a ``kill PID``), the experiment runs on and ends normally: it commits its result in
the workspace under DVC's experiment ref ``refs/exps/<baseline[:2]>/<baseline[2:]>/<name>``
and writes the result (``result_hash``, ``result_ref``, ``status`` 3 = success) into its
info file ``.dvc/tmp/exps/run/<stash rev>/<stash rev>.run``. Collecting it (fetching that
ref into the repository, DVC's ``collect_exp`` task) and deleting the workspace
(``cleanup_exp``) were the worker's next tasks, so they never run: ``dvc queue status`` and
``dvc exp show`` say ``Running`` for ever, and the result exists only in the workspace.

- :func:`finished` reads an orphaned experiment's info file; :func:`collect` does what the
  worker would have done, with DVC's own calls (``BaseStashQueue.collect_executor``, then
  the task marked done and ``TempDirExecutor.cleanup``), deleting the workspace only once
  the repository holds the experiment's ref: ``dvc exp show`` lists it with its metrics and
  ``dvc queue status`` says ``Success``.
- :func:`results_in` names the experiment refs a workspace holds that the repository lacks
  (whatever the queue says: an entry already killed or removed); such a workspace is never
  deleted before :func:`fetch_results` has copied them into the repository.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pipeline.errors import SetupError

SUCCESS = 3  # dvc.repo.experiments.executor.base.TaskStatus.SUCCESS


class CollectError(SetupError):
    """A finished experiment could not be copied into the repository."""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False)  # fmt: skip


def exp_refs(repo: Path) -> dict[str, str]:
    """``{ref: commit}`` of the experiment results in a git repository: the refs
    ``refs/exps/<2 hex>/<38 hex>/<name>`` (DVC's queue stash and ``exec`` refs left out)."""
    proc = _git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/exps")
    out = {}
    for line in proc.stdout.splitlines():
        ref, _, sha = line.partition(" ")
        parts = ref.split("/")
        if len(parts) >= 5 and len(parts[2]) == 2 and len(parts[3]) == 38:
            out[ref] = sha
    return out


def results_in(root: Path, workspaces: Iterable[Path]) -> dict[Path, list[str]]:
    """``{workspace: its experiment refs the repository lacks}`` (those with any)."""
    mine = exp_refs(root)
    out = {}
    for ws in workspaces:
        if not (ws / ".git").exists():
            continue
        lost = sorted(ref for ref, sha in exp_refs(ws).items() if mine.get(ref) != sha)
        if lost:
            out[ws] = lost
    return out


def fetch_results(root: Path, workspace: Path, refs: list[str]) -> None:
    """Copy ``refs`` from ``workspace`` into the repository (no force: an experiment of the
    same name with another result is never overwritten), then check they are there."""
    proc = _git(root, "fetch", "--no-tags", "--quiet", str(workspace), *(f"{r}:{r}" for r in refs))
    have = exp_refs(root)
    theirs = exp_refs(workspace)
    missing = [r for r in refs if have.get(r) != theirs.get(r)]
    if proc.returncode != 0 or missing:
        raise CollectError(
            f"{workspace}: could not copy {', '.join(missing) or refs[0]} into the repository "
            f"({proc.stderr.strip()[-200:] or 'not there after git fetch'}); the workspace is "
            "kept. An experiment of the same name exists? Rename it (`dvc exp rename`), then "
            "run the doctor again"
        )


def finished(queue: Any, stash_rev: str) -> Any | None:
    """The ``ExecutorInfo`` of an experiment whose run ended with a result (its info file
    says success and names its ref), else None."""
    from dvc.repo.experiments.executor.base import ExecutorInfo

    path = Path(queue.get_infofile_path(stash_rev))
    if not path.is_file():
        return None
    try:
        info = ExecutorInfo.load_json(str(path))
    except (ValueError, TypeError, OSError):
        return None
    return info if info.status == SUCCESS and info.result_ref and info.result_hash else None


def collect(root: Path, stash_rev: str, task_ids: set[str]) -> None:
    """What the killed worker would have done next: copy the experiment's result into the
    repository (DVC's ``collect_executor``), mark its queue task done, then delete its
    workspace (DVC's ``cleanup``), the last only once the repository holds the result."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo
    from dvc.repo.experiments.executor.local import TempDirExecutor
    from dvc.repo.experiments.queue.base import BaseStashQueue

    with Repo(str(root)) as repo:
        queue = repo.experiments.celery_queue
        info = finished(queue, stash_rev)
        if info is None:
            raise CollectError(
                f"experiment {stash_rev[:7]}: its result is gone; run the doctor again"
            )
        executor = TempDirExecutor.from_info(info)
        workspace = Path(info.root_dir)
        if workspace.is_dir():
            try:
                BaseStashQueue.collect_executor(repo.experiments, executor, info.result)
            except DvcException as e:  # e.g. an experiment of that name exists: kept
                raise CollectError(
                    f"experiment {info.name or stash_rev[:7]}: DVC could not collect it from "
                    f"{workspace} ({e}); nothing deleted. Rename the other experiment (`dvc "
                    "exp rename`), then run the doctor again"
                ) from e
            lost = results_in(root, [workspace]).get(workspace, [])
            if info.result_ref in lost:
                fetch_results(root, workspace, [info.result_ref])
        if info.result_ref not in exp_refs(root):
            raise CollectError(
                f"experiment {info.name or stash_rev[:7]}: its result ({info.result_ref}) is "
                f"neither in the repository nor in {workspace}; nothing deleted"
            )
        for task_id in task_ids:
            queue.celery.backend.mark_as_done(task_id, None)
        executor.cleanup(queue.get_infofile_path(stash_rev))
