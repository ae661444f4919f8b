"""Stale training checkpoints: the doctor's item 4 and the sweep each train stage runs first.

Kept apart from `pipeline.doctor` (which imports this) so that the train stages' code digest
holds only this file, not the whole doctor: a change to the doctor's other checks retrains
nothing. :class:`Finding` is the doctor's record of one thing found.
"""

from __future__ import annotations

import logging
import shutil
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline import paths

log = logging.getLogger("pipeline.doctor")

CHECKPOINTS = paths.CHECKPOINTS.as_posix()
CKPT = "checkpoint.pt"


@dataclass
class Finding:
    """One thing found: what is wrong (``what``), what ``--fix`` does (``repair``) and the
    repair itself (``None``: reported only, nothing to repair)."""

    what: str
    repair: str = ""
    fix: Callable[[], None] | None = None
    then: Sequence[str] = ()  # a command the repair runs once DVC's lock is released
    failed: str = ""
    """Why ``fix`` failed (``--fix``), else empty."""
    about: str = ""
    """The path it is about, where two checks can find the same thing (an orphaned
    experiment's workspace): the doctor reports the first and skips a later one."""


def checkpoint_findings(root: Path, skip: str | None = None) -> list[Finding]:
    """Stale checkpoints under ``checkpoints/`` (module docstring, item 4); ``skip``: a
    method whose checkpoints are in use (the train stage calling :func:`sweep_checkpoints`)."""
    folder = root / CHECKPOINTS
    methods = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    methods = [m for m in methods if m.name != skip]
    if not methods:
        return []
    out = []
    status = _train_status(root, [m.name for m in methods])
    for method in methods:
        rel = method.relative_to(root)
        temps = sorted(method.rglob("*.tmp"))
        state = status[method.name]
        if state == "resumable":
            out += _resumable(root, method, temps)
            continue
        out.append(delete_paths(root, [method], f"{rel}: stale checkpoints ({state})"))
    return out


def _resumable(root: Path, method: Path, temps: list[Path]) -> list[Finding]:
    """The checkpoints of a stage that will run: its usable ones are kept and reported (the
    stage resumes from them); unfinished ``.tmp`` files and checkpoint files that are not a
    complete ``torch.save`` archive are deleted. Without a usable checkpoint nothing is
    resumed: the folder goes, and the report says the stage trains from its first step."""
    rel = method.relative_to(root)
    files = sorted(method.rglob(CKPT))
    usable = [p for p in files if zipfile.is_zipfile(p)]  # torch.save writes a zip archive
    broken = [p for p in files if p not in usable]
    if not usable:
        parts = [f"{len(temps)} unfinished .tmp files of a killed writer" if temps else "",
                 f"{len(broken)} unreadable {CKPT}" if broken else ""]  # fmt: skip
        held = " and ".join(p for p in parts if p) or "nothing"
        return [delete_paths(root, [method], f"{rel}: no usable checkpoint (it holds {held}), so "
                        f"the next `dvc repro` trains train@{method.name} from its first "
                        "step")]  # fmt: skip
    out = []
    if temps or broken:
        what = f"{rel}: {len(temps)} unfinished checkpoint files of a killed writer" + (
            f" and {len(broken)} unreadable {CKPT}" if broken else ""
        )
        out.append(delete_paths(root, [*temps, *broken], what))
    found = ", ".join(str(p.parent.relative_to(method)) for p in usable)
    out.append(Finding(f"{rel}: resumable checkpoints ({found}); the next `dvc repro` "
                       f"resumes train@{method.name} from them"))  # fmt: skip
    return out


def delete_paths(root: Path, paths: list[Path], what: str) -> Finding:
    """A finding whose repair deletes ``paths`` (then ``checkpoints/`` itself when empty)."""

    def remove() -> None:
        for p in paths:
            shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
        top = root / CHECKPOINTS
        if top.is_dir() and not any(top.iterdir()):
            top.rmdir()

    names = [str(p.relative_to(root)) for p in paths]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return Finding(what, f"delete {shown}", remove)


def _train_status(root: Path, methods: list[str]) -> dict[str, str]:
    """Per method, ``resumable`` or why its checkpoints are stale, from the ``train@<method>``
    stage of ``dvc.yaml`` and its ``dvc.lock`` entry. DVC's own stage and output status calls
    take its repository lock, which a running ``dvc repro`` holds while the train stage calls
    this; the same checks are made here directly, without the lock (read only)."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    out = {}
    with Repo(str(root)) as repo:
        for m in methods:
            try:  # the full path: a bare name would be looked up in the working directory
                (stage,) = repo.stage.collect(f"{root / 'dvc.yaml'}:train@{m}")
            except DvcException:
                out[m] = f"no stage train@{m} in dvc.yaml: the method was removed"
                continue
            changed = (
                stage.changed_stage()
                or any(dep.status() for dep in stage.deps)
                or any(o.status() for o in stage.outs)
            )
            out[m] = (
                "resumable"
                if changed
                else f"train@{m} is up to date: its outputs are in place (DVC restored them "
                "from its cache), so they will never be resumed"
            )
    return out


def sweep_checkpoints(keep: str, root: Path | None = None) -> None:
    """Delete other methods' stale checkpoints (the train stage calls it first). Quiet and
    cheap when there are none; a failure is a warning: housekeeping never stops training."""
    here = (root or Path.cwd()).resolve()
    folder = here / CHECKPOINTS
    if not folder.is_dir() or not any(p.name != keep for p in folder.iterdir()):
        return
    try:
        for f in checkpoint_findings(here, skip=keep):
            if f.fix is not None:
                f.fix()
                log.info("removed %s", f.what)
    except Exception as e:  # e.g. a damaged dvc.lock: the doctor reports it
        log.warning("could not check other methods' checkpoints (%s); `python -m "
                    "pipeline.doctor` reports them", e)  # fmt: skip
