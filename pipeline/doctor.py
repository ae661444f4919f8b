"""Find and repair what a killed run leaves behind: ``python -m pipeline.doctor [--fix]``.

DVC rewrites ``.dvc/tmp/rwlock`` and ``dvc.lock`` in place, so a SIGKILL (an OOM kill, a
closed laptop, a CI timeout) in the middle of either write leaves an empty or cut file, after
which every ``dvc`` command fails (``Unable to read RWLock-file``, ``'./dvc.lock' validation
failed``). A queue worker killed mid-experiment leaves the experiment ``Running`` for ever,
and its temporary workspace on disk. A training run killed after a checkpoint, whose stage
DVC then restores from its cache instead of running it, leaves the checkpoint behind. A copy
into a full DVC cache fails without failing the run (DVC 3.67). Checked in this order:

1. DVC processes: a ``dvc`` command or a stage running in this repository (``psutil``). If
   any runs, the doctor only lists them and changes nothing (exit 2): their files are
   work in progress, not damage.
2. ``.dvc/tmp/rwlock`` (and ``.dvc/tmp/exps/rwlock``): empty, not JSON or not DVC's format
   (repair: delete it; DVC writes a new one, it holds only the locks of running commands),
   or holding the lock of a live process that is not a DVC command of this repository (DVC
   killed, its PID reused: DVC removes the entries of dead PIDs itself, never of live ones;
   repair: remove those entries).
3. ``dvc.lock``: empty, cut (not ending in a newline, not YAML) or not DVC's format. Repair:
   keep the complete entries before the cut, drop the entry the cut went through, and take
   the entries the cut lost from the committed ``dvc.lock`` (``git show HEAD:dvc.lock``); DVC
   reruns, or restores from its run-cache, every stage whose entry does not match the
   workspace. Without any entry left the file is removed (DVC restores or reruns everything).
4. The DVC cache (``pipeline/dvc_cache.py``): partial ``*.tmp`` files of copies into it that
   failed, and outputs in the workspace, as dvc.lock records them, that the cache lacks
   (DVC's ``not in cache``). Repair: delete the partial files, then copy each such output
   into the cache (dvc.lock does not change). A cache object whose bytes no longer match
   its md5 (an output changed in place through its hard link; ``pipeline/doctor_cache.py``).
   Repair: delete it and the output, then ``dvc repro -f -s STAGE``.
5. ``checkpoints/<method>/``: unfinished ``.tmp`` files of a killed writer, checkpoint files
   that are not a complete ``torch.save`` archive, checkpoints of a method no longer in
   ``dvc.yaml``, and checkpoints of a ``train@<method>`` stage that is up to date (its
   outputs are in place: DVC restored them from its cache, so the checkpoint would never be
   resumed). Repair: delete them. A usable checkpoint of a stage that is not up to date is
   kept and reported: the next ``dvc repro`` resumes from it; without one, the report says
   the stage trains from its first step.
6. The experiment queue: experiments ``Running`` with no queue worker and no live process.
   One that finished (its result committed in its workspace, ``pipeline/doctor_queue.py``)
   is collected with DVC's own calls, as its worker would have. Any other: ``dvc queue
   kill`` (DVC's own call) marks it failed, so ``dvc exp show`` stops listing it as running
   with its parent's metrics; ``dvc queue remove`` drops it.
7. ``.dvc/tmp/exps/tmp*``: the temporary workspaces of queued experiments (tens of MB each)
   that no process uses, left by a killed worker. Repair: delete them; one holding an
   experiment ref the repository lacks only after copying that ref into the repository.
8. A failed ``dvc exp run``: ``params.yaml`` (or ``dvc.yaml``, ``dvc.lock``) still holds the
   experiment's values while git's index, which DVC left with the file's new size and time,
   calls it unchanged (``pipeline/doctor_exp.py``). Repair: write back git's version, then
   ``dvc checkout`` (after the lock is released) restores the outputs the run deleted.

First of all, a ``params.yaml`` or ``dvc.yaml`` that is not YAML (DVC reads them before
anything else) is named in one line, with where it breaks and the fix; nothing is checked or
changed (exit 2). Without ``--fix`` it only reports (exit 1 when something needs repair).
``--fix`` holds DVC's repository lock while it repairs, so no DVC command starts meanwhile;
a repair that fails (the cache's disk still full) is reported as ``FAILED`` (exit 1). The
train stage calls `pipeline.doctor_checkpoints.sweep_checkpoints` at its start, so stale
checkpoints of other methods also go without the doctor. The table of these states, each
with the test that makes it, is in the README's "Troubleshooting".
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil

from pipeline import io
from pipeline.doctor_checkpoints import (
    Finding,
    checkpoint_findings,
    delete_paths,
)
from pipeline.errors import PipelineError

log = logging.getLogger("pipeline.doctor")

RWLOCKS = (".dvc/tmp/rwlock", ".dvc/tmp/exps/rwlock")
EXPS = ".dvc/tmp/exps"


# -- 1. running DVC processes -------------------------------------------------------------


def dvc_processes(root: Path) -> list[str]:
    """``pid: command`` of each ``dvc`` command or stage (``-m stages.…``) whose working
    directory is inside ``root`` (a queued experiment runs in ``.dvc/tmp/exps/``). DVC's
    detached helpers (``dvc daemon`` for its update check and analytics, and the forked copy
    of a command that waits for one) never touch the repository and are left out."""
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        cmd, cwd = proc.info["cmdline"] or [], proc.info["cwd"]
        if proc.info["pid"] in mine or not cwd or not _is_dvc(cmd) or _is_daemon(proc, cmd):
            continue
        if Path(cwd).resolve().is_relative_to(root):
            found.append(f"{proc.info['pid']}: {' '.join(cmd)[:160]}")
    return found


def _is_dvc(cmd: Sequence[str]) -> bool:
    modules = {cmd[i + 1] for i, a in enumerate(cmd[:-1]) if a == "-m"}
    return any(Path(a).name == "dvc" for a in cmd[:2]) or any(
        m == "dvc" or m.startswith("stages.") for m in modules
    )


def _is_daemon(proc: psutil.Process, cmd: Sequence[str]) -> bool:
    if "daemon" in cmd:
        return True
    try:  # the forked copy waiting for it: every child a daemon (processes come and go)
        children = proc.children()
        return bool(children) and all("daemon" in (c.cmdline() or []) for c in children)
    except psutil.Error:
        return False


# -- 2. rwlock ------------------------------------------------------------------------------


def rwlock_findings(root: Path) -> list[Finding]:
    """An empty, cut or malformed rwlock file: every ``dvc`` command fails on it. A lock held
    by a live process that is not a DVC command of this repository (DVC was killed and its
    PID reused): every ``dvc`` command then says the path ``is busy`` for ever (DVC removes
    the entries of dead PIDs itself, never those of live ones)."""
    from dvc.rwlock import SCHEMA
    from voluptuous import Invalid

    out = []
    for rel in RWLOCKS:
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            lock = SCHEMA(json.loads(text))
            stale = _stale_holders(root, lock)
            if stale:
                out.append(_stale_finding(path, rel, lock, stale))
            continue
        except json.JSONDecodeError:
            state = "empty" if not text.strip() else f"cut ({len(text)} bytes, not JSON)"
        except Invalid as e:
            state = f"not in DVC's format ({e})"
        out.append(
            Finding(
                f"{rel} is {state}: a DVC command was killed while writing it, and every dvc "
                "command now fails with 'Unable to read RWLock-file'",
                f"delete {rel} (it holds only the locks of running DVC commands; none runs)",
                functools.partial(path.unlink, missing_ok=True),
            )
        )
    return out


def _holders(lock: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from lock.get("write", {}).values()
    for infos in lock.get("read", {}).values():
        yield from infos


def _stale_holders(root: Path, lock: dict[str, Any]) -> dict[int, str]:
    """``{pid: what runs under it now}`` of the lock's live PIDs that are not a DVC command
    (or stage) running in ``root``. A dead PID is left to DVC (it removes those entries
    itself); a process whose command line we may not read counts as DVC's; one that is DVC
    but whose working directory we may not read (another user's) too."""
    out = {}
    for pid in sorted({int(i["pid"]) for i in _holders(lock)}):
        try:
            proc = psutil.Process(pid)
            cmd = proc.cmdline()
            if _is_dvc(cmd):
                cwd = proc.cwd()
                if cwd and Path(cwd).resolve().is_relative_to(root):
                    continue
            out[pid] = " ".join(cmd)[:80] or proc.name()  # e.g. PID 1: init
        except psutil.Error:  # gone meanwhile, or not ours to inspect
            continue
    return out


def _stale_finding(path: Path, rel: str, lock: dict[str, Any], stale: dict[int, str]) -> Finding:
    pids = ", ".join(f"{pid} (now `{cmd}`)" for pid, cmd in stale.items())
    return Finding(
        f"{rel} holds locks of PID {pids}, not a DVC command of this repository: DVC was "
        "killed and its PID reused, so every dvc command says the path `is busy`",
        f"remove those entries from {rel} (no DVC command runs; DVC rewrites it as it goes)",
        functools.partial(_drop_holders, path, lock, set(stale)),
    )


def _drop_holders(path: Path, lock: dict[str, Any], pids: set[int]) -> None:
    """Rewrite the rwlock without the entries of ``pids`` (remove it when none is left)."""
    write = {p: i for p, i in lock.get("write", {}).items() if int(i["pid"]) not in pids}
    read = {p: kept for p, infos in lock.get("read", {}).items()
            if (kept := [i for i in infos if int(i["pid"]) not in pids])}  # fmt: skip
    if not write and not read:
        path.unlink(missing_ok=True)
        return
    io.write_text(json.dumps({"write": write, "read": read}), path)


# -- 3. dvc.lock ----------------------------------------------------------------------------


def lockfile_findings(root: Path) -> list[Finding]:
    """An empty or cut ``dvc.lock`` and how it is rebuilt (module docstring, item 3).

    A cut file is often still valid YAML that DVC reads without a word, treating every entry
    the cut lost as a stage never run. So a file is taken as cut when it does not end in a
    newline, is not DVC's format, its last entry lacks a dependency or output that its stage
    declares, or it lacks the entry of a stage that ``dvc.yaml`` defines and the committed
    ``dvc.lock`` has (DVC never drops those by itself)."""
    path = root / "dvc.lock"
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    parsed = _valid_lock(text)
    data = parsed if text.endswith("\n") else None
    committed = _committed_entries(root)
    if data is None:
        kept = _complete_entries(text)
    else:
        kept = dict(data.get("stages") or {})
        last = list(kept)[-1:]
        if last and not _declared_in(root, last[0], kept[last[0]]):
            del kept[last[0]]
    declared = _stage_paths(root, [n for n in committed if n not in kept])
    lost = [n for n in committed if n not in kept and n in declared]
    if data is not None and len(kept) == len(data.get("stages") or {}) and not lost:
        return []
    stages = {**kept, **{name: committed[name] for name in lost}}
    state = "empty" if not text.strip() else f"cut ({len(text)} bytes)"
    repair = f"keep its {len(kept)} complete entries"
    if lost:
        repair += f", take {len(lost)} lost ones from the committed dvc.lock (git HEAD)"
    repair += (
        "; DVC then reruns or restores every stage whose entry does not match"
        if stages
        else "; no entry is left, so remove it (DVC reruns or restores every stage)"
    )
    fails = (
        "every dvc command fails on it"
        if parsed is None
        else "it still parses, so DVC would silently rerun every stage whose entry it lost"
    )
    return [
        Finding(
            f"dvc.lock is {state}: DVC was killed while rewriting it; {fails}",
            repair,
            functools.partial(_write_lock, path, stages),
        )
    ]


Declared = tuple[set[str], set[str], dict[str, set[str]]]


def _stage_paths(root: Path, names: list[str]) -> dict[str, Declared]:
    """``dvc.yaml``'s declared ``(dependency paths, output paths, params keys per file)`` of
    each stage of ``names`` that it defines. Read from ``dvc.yaml`` alone: DVC's usual stage
    loading reads ``dvc.lock`` too, and fails on a cut one."""
    if not names or not (root / "dvc.yaml").is_file():
        return {}
    from dvc.dependency.param import ParamsDependency
    from dvc.dvcfile import ProjectFile
    from dvc.repo import Repo
    from dvc.stage.loader import StageLoader

    with Repo(str(root)) as repo:
        dvcfile = ProjectFile(repo, str(root / "dvc.yaml"))
        loader = StageLoader(dvcfile, dvcfile.contents, {})
        out = {}
        for name in (n for n in names if n in loader):
            stage = loader[name]
            params = {d.def_path: set(d.params or ()) for d in stage.deps
                      if isinstance(d, ParamsDependency)}  # fmt: skip
            deps = {d.def_path for d in stage.deps if not isinstance(d, ParamsDependency)}
            out[name] = (deps, {o.def_path for o in stage.outs}, params)
    return out


def _declared_in(root: Path, name: str, entry: dict[str, Any]) -> bool:
    """Whether a lock entry has every dependency, output and parameter its stage declares,
    each with its hash (a cut entry lacks the tail of its lists or of their last item)."""
    declared = _stage_paths(root, [name]).get(name)
    if declared is None:
        return True  # no longer in dvc.yaml: not ours to judge
    items = [*entry.get("deps", []), *entry.get("outs", [])]
    if "cmd" not in entry or not all(i.get(i.get("hash", "md5")) for i in items):
        return False
    params = entry.get("params") or {}
    return (
        declared[0] <= {d["path"] for d in entry.get("deps", [])}
        and declared[1] <= {o["path"] for o in entry.get("outs", [])}
        and all(keys <= set(params.get(f) or {}) for f, keys in declared[2].items())
    )


def _valid_lock(text: str) -> dict[str, Any] | None:
    """The parsed lock file when it is valid YAML in DVC's lock file format, else None."""
    from dvc.schema import COMPILED_LOCKFILE_SCHEMA
    from dvc.utils.serialize import loads_yaml

    try:
        data = loads_yaml(text)
        COMPILED_LOCKFILE_SCHEMA(data)
    except Exception:  # ruamel's parser errors share no base class with voluptuous' Invalid
        return None
    return data if isinstance(data, dict) else None


def _blocks(text: str) -> Iterator[tuple[str, str]]:
    """``(stage name, its YAML lines)`` of each entry under ``stages:``, in file order."""
    name, lines = None, []
    for line in text.splitlines(keepends=True):
        top = line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(":")
        if top and not line.lstrip().startswith("-"):
            if name is not None:
                yield name, "".join(lines)
            name, lines = line.strip()[:-1].strip("'\""), [line]
        elif name is not None:
            lines.append(line)
    if name is not None:
        yield name, "".join(lines)


def _complete_entries(text: str) -> dict[str, Any]:
    """The valid entries of a cut lock file, except the last one (the cut went through it,
    or the cut lost what followed; either way it cannot be trusted)."""
    blocks = list(_blocks(text))[:-1]
    out: dict[str, Any] = {}
    for name, body in blocks:
        data = _valid_lock(f"schema: '2.0'\nstages:\n{body}")
        if data is not None and name in data.get("stages", {}):
            out[name] = data["stages"][name]
    return out


def _committed_entries(root: Path) -> dict[str, Any]:
    """Stage entries of the committed ``dvc.lock`` (``git show HEAD:dvc.lock``), if any."""
    try:
        proc = subprocess.run(
            ["git", "show", "HEAD:dvc.lock"], cwd=root, capture_output=True, text=True, check=False
        )
    except OSError:  # no git
        return {}
    data = _valid_lock(proc.stdout) if proc.returncode == 0 else None
    return dict(data.get("stages") or {}) if data else {}


def _write_lock(path: Path, stages: dict[str, Any]) -> None:
    """Write the entries as DVC writes its lock file (its YAML dumper), atomically."""
    from io import StringIO

    from dvc.utils.serialize._yaml import _dump

    if not stages:
        path.unlink(missing_ok=True)
        return
    buffer = StringIO()
    _dump({"schema": "2.0", "stages": stages}, buffer)
    io.write_text(buffer.getvalue(), path)


# -- 4. the DVC cache ---------------------------------------------------------------------------


def cache_findings(root: Path) -> list[Finding]:
    """Partial files of copies into the cache that failed, and outputs in the workspace that
    the cache lacks (``pipeline/dvc_cache.py``): DVC 3.67 logs ``failed to transfer`` and
    exits 0 when the cache's disk is full. Repair: delete the partial files (room for the
    rest), then copy each such output into the cache (``dvc commit`` of that output alone:
    its workspace copy is what dvc.lock records, so dvc.lock does not change)."""
    from pipeline import dvc_cache

    out = []
    partial = dvc_cache.partial_files(root)
    if partial:
        size = io.size_text(sum(p.stat().st_size for p in partial))
        where = _rel(root, dvc_cache.cache_dir(root))
        out.append(Finding(
            f"{where}: {len(partial)} partial files ({size}) of copies into the DVC cache that "
            "failed (a full disk?); they only take room",
            f"delete them ({_rel(root, partial[0])}{' …' * (len(partial) > 1)})",
            functools.partial(_unlink_all, partial),
        ))  # fmt: skip
    for u in dvc_cache.uncached(root):
        out.append(Finding(
            f"{u.path} (output of {u.stage}) is not in the DVC cache: copying it there failed "
            "and DVC went on, so a `dvc checkout` (another experiment, a clone) would lose it",
            "copy it into the cache (its workspace copy is what dvc.lock records)",
            functools.partial(_commit, root, u),
        ))  # fmt: skip
    return out


def _rel(root: Path, path: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _unlink_all(files: list[Path]) -> None:
    for f in files:
        f.unlink(missing_ok=True)


def _commit(root: Path, u: Any) -> None:
    """Copy one output into the cache (DVC's ``Output.commit``, no relinking), then check it
    is there; a copy that fails again raises with DVC's words."""
    from dvc.repo import Repo

    from pipeline.dvc_cache import CacheError

    with Repo(str(root)) as repo:
        (output,) = [o for s in repo.index.stages if s.name == u.stage
                     for o in s.outs if str(o.def_path) == u.path]  # fmt: skip
        output.commit(relink=False)
        if output.changed_cache():
            raise CacheError(
                f"{u.path}: still not in the DVC cache after copying it again; make room "
                "where the cache is (`dvc cache dir`), then run the doctor again"
            )


# -- 5. checkpoints: pipeline/doctor_checkpoints.py ----------------------------------------


# -- 6. the experiment queue ------------------------------------------------------------------


def queue_findings(root: Path) -> list[Finding]:
    """Queued experiments ``Running`` with no worker and no live process (item 5)."""
    if not (root / ".dvc/tmp/exps/celery").is_dir():
        return []
    from dvc.repo import Repo

    repo = Repo(str(root))
    queue = repo.experiments.celery_queue
    active = list(queue.iter_active())
    if not active:
        return []
    running = {t["id"] for tasks in queue.worker_status().values() for t in tasks}
    out = []
    for entry in active:
        info = queue.proc.get(entry.stash_rev)
        alive = info is not None and info.returncode is None and _running(info.pid)
        name = entry.name or entry.stash_rev[:7]
        if alive or _task_ids(queue, entry) & running:
            continue
        if (done := _finished(root, queue, entry, name)) is not None:
            out.append(done)
            continue
        out.append(
            Finding(
                f"experiment {name!r} is listed as Running, but no queue worker and no "
                "process runs it (its worker was killed)",
                f"mark it failed (`dvc queue kill {name}`); then `dvc queue logs {name}` "
                f"shows its log and `dvc queue remove {name}` drops it",
                functools.partial(queue.kill, [entry.stash_rev], force=True),
            )
        )
    return out


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, an exited child its dead worker never reaped, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _finished(root: Path, queue: Any, entry: Any, name: str) -> Finding | None:
    """An orphaned experiment that finished: collected, never marked failed (doctor_queue)."""
    from pipeline import doctor_queue

    info = doctor_queue.finished(queue, entry.stash_rev)
    if info is None:
        return None
    return Finding(
        f"experiment {name!r} finished after its queue worker was killed, but was never "
        f"collected: its result ({info.result_ref}) is only in {_rel(root, Path(info.root_dir))}",
        "collect it (`dvc exp show` then lists it with its metrics, `dvc queue status` says "
        "Success), then delete its temporary workspace",
        functools.partial(doctor_queue.collect, root, entry.stash_rev, _task_ids(queue, entry)),
        about=_rel(root, Path(info.root_dir)),
    )


def _task_ids(queue: Any, entry: Any) -> set[str]:
    return {
        msg.headers["id"] for msg, e in queue._iter_processed() if e.stash_rev == entry.stash_rev
    }


# -- 7. the queue's temporary workspaces ------------------------------------------------------


def workspace_findings(root: Path) -> list[Finding]:
    """``.dvc/tmp/exps/tmp*``: the copy of the repository a queued experiment runs in (tens
    of MB each). DVC deletes it when the experiment ends; a killed worker leaves it for ever.
    Repair: delete those no process works in (none does: no DVC command runs)."""
    folder = root / EXPS
    dirs = sorted(p for p in folder.glob("tmp*") if p.is_dir()) if folder.is_dir() else []
    if not dirs:
        return []
    used = set()
    for proc in psutil.process_iter(["cwd"]):
        cwd = proc.info["cwd"]
        used |= {d for d in dirs if cwd and Path(cwd).resolve().is_relative_to(d.resolve())}
    left = [d for d in dirs if d not in used]
    from pipeline import doctor_queue  # a workspace holding a result goes only once it is copied

    held = doctor_queue.results_in(root, left)
    kept = [Finding(f"{_rel(root, d)} holds experiment results the repository lacks "
                    f"({', '.join(refs)})", "copy them into the repository (`dvc exp show` "
                    "lists them), then delete the workspace",
                    functools.partial(_fetch_and_delete, root, d, refs), about=_rel(root, d))
            for d, refs in held.items()]  # fmt: skip
    left = [d for d in left if d not in held]
    if not left:
        return kept
    size = io.size_text(sum(_size(d) for d in left))
    return [*kept, delete_paths(root, left, f"{EXPS}: {len(left)} temporary workspaces of queued "
                    f"experiments ({size}) that no process uses: their queue worker was "
                    "killed, and DVC deletes them only when the experiment ends")]  # fmt: skip


def _fetch_and_delete(root: Path, workspace: Path, refs: list[str]) -> None:
    from pipeline import doctor_queue

    doctor_queue.fetch_results(root, workspace, refs)  # raises (workspace kept) if it fails
    shutil.rmtree(workspace)


def _size(folder: Path) -> int:
    """Bytes of the files under ``folder`` (links not followed)."""
    total = 0
    for parent, _, names in os.walk(folder):
        total += sum(os.lstat(os.path.join(parent, n)).st_size for n in names)
    return total


# -- 8. what a failed `dvc exp run` left behind git's back (pipeline/doctor_exp.py) ----------


def failed_experiment_findings(root: Path) -> list[Finding]:
    from pipeline import doctor_exp

    return doctor_exp.findings(root, Finding)


def corrupt_cache_findings(root: Path) -> list[Finding]:
    from pipeline import doctor_cache

    return doctor_cache.findings(root, Finding)


def _run_after(root: Path, problems: Sequence[Finding]) -> None:
    """The commands repairs asked for once DVC's lock is free (`dvc checkout`), each once."""
    for cmd in dict.fromkeys(tuple(f.then) for f in problems if f.then):
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
        shown = " ".join(["dvc", *cmd[3:]] if cmd[1:3] == ("-m", "dvc") else cmd)
        status = "done" if proc.returncode == 0 else f"failed ({proc.stderr.strip()[-300:]})"
        sys.stdout.write(f"RAN    {shown}: {status}\n")


# -- the command ------------------------------------------------------------------------------


def diagnose(root: Path, fix: bool) -> tuple[list[Finding], list[Finding]]:
    """``(problems, notes)`` found in ``root``; with ``fix`` each problem is repaired as soon
    as it is found (the later checks read DVC's state, which needs the earlier repairs)."""
    problems: list[Finding] = []
    notes: list[Finding] = []
    checks = (rwlock_findings, lockfile_findings, cache_findings, corrupt_cache_findings,
              checkpoint_findings, queue_findings, workspace_findings,
              failed_experiment_findings)  # fmt: skip
    later = {cache_findings: "the DVC cache", checkpoint_findings: "checkpoints",
             queue_findings: "the experiment queue"}  # fmt: skip
    for check in checks:
        if problems and not fix and check in later:  # they read dvc.lock and DVC's state
            notes.append(Finding(f"{later[check]}: checked once the problems above are repaired"))
            continue
        for f in check(root):
            if f.about and f.about in {g.about for g in problems}:
                continue  # found by an earlier check (its repair covers it)
            (problems if f.fix else notes).append(f)
            if fix and f.fix:
                try:
                    f.fix()
                except PipelineError as e:  # e.g. the cache's disk is still full
                    f.failed = str(e)
    return problems, notes


def unreadable_yaml(root: Path) -> str | None:
    """One line for a ``params.yaml`` or ``dvc.yaml`` that is not YAML (DVC reads both before
    anything else, and its error is a traceback): the file, where, and the fix; else None."""
    import yaml

    for name in ("params.yaml", "dvc.yaml"):
        path = root / name
        if not path.is_file():
            continue
        try:
            yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            mark = getattr(e, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}:" if mark else ""
            problem = getattr(e, "problem", None) or type(e).__name__
            return (
                f"{path}:{where} not valid YAML ({problem}); nothing checked or changed. Fix "
                f"the file (`git diff {name}` shows what changed), then run the doctor again"
            )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.doctor", description=__doc__)
    ap.add_argument("--fix", action="store_true", help="repair what is found")
    ap.add_argument("--repo", default=".", help="the repository (default: here)")
    ns = ap.parse_args(argv)
    # DVC's queue libraries warn about their own internals (kombu's host name, a dead process)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    root = Path(ns.repo).resolve()
    if not (root / ".dvc").is_dir():
        sys.stdout.write(f"{root}: not a DVC repository (no .dvc/)\n")
        return 2
    if (broken := unreadable_yaml(root)) is not None:
        sys.stdout.write(broken + "\n")
        return 2
    running = dvc_processes(root)
    if running:
        lines = "".join(f"  {p}\n" for p in running)
        sys.stdout.write(f"DVC is running in {root}; nothing checked or changed. Wait for it, "
                         f"or stop it, then run the doctor again:\n{lines}")  # fmt: skip
        return 2
    if ns.fix:
        from dvc.repo import Repo, lock_repo

        with lock_repo(Repo(str(root))):  # no DVC command starts while we repair
            problems, notes = diagnose(root, fix=True)
    else:
        problems, notes = diagnose(root, fix=False)
    for f in problems:
        state = "FAILED" if f.failed else "FIXED " if ns.fix else "FOUND "
        sys.stdout.write(f"{state} {f.what}\n       → {f.failed or f.repair}\n")
    if ns.fix:
        _run_after(root, problems)
    for f in notes:
        sys.stdout.write(f"OK     {f.what}\n")
    if not problems:
        sys.stdout.write(f"nothing to repair in {root}\n")
        return 0
    failed = [f for f in problems if f.failed]
    if failed:
        sys.stdout.write(f"{len(failed)} of {len(problems)} could not be repaired (above)\n")
        return 1
    if ns.fix:
        sys.stdout.write(f"repaired {len(problems)}; `dvc repro` continues from here\n")
        return 0
    sys.stdout.write(
        f"{len(problems)} to repair; run `python -m pipeline.doctor --fix` to repair them\n"
    )
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
