"""DVC cache objects whose bytes no longer match their md5 (a check of ``pipeline.doctor``).

``.dvc/config`` links workspace outputs to the cache with hard links (``cache.type =
hardlink``, the decision and its numbers are in ``docs/decisions.md``): the workspace file and
its cache object are one file. DVC makes both read-only, which stops a user's tools but not
``root`` (a container, CI) nor a disk fault: a file changed in place (``truncate -s 100
data/candidates.parquet``) changes its cache object too. DVC names an object by the md5 it
had when it was stored and never rereads it: ``dvc repro`` restores the stage from its
run-cache by linking the output to that object (exit 0, ``dvc status`` up to date), ``dvc
repro -f -s STAGE`` reruns it and links its fresh bytes to the same object, and ``dvc
checkout`` does the same: the corrupt file has become the recorded one. No stage code runs
on the run-cache path, so the stages cannot check this themselves; the doctor does.

:func:`corrupt` rehashes every object that ``dvc.lock`` records (a DVC 3 object's name under
``files/md5/xx/`` is its md5; a ``.dir`` object is the JSON listing of a folder's files, each
an object checked in turn) and names each output whose object does not match, with its stage.
The repair (:func:`findings`) deletes the bad objects and the workspace output, then reruns
the stage (``dvc repro -f -s STAGE``, once DVC's lock is released): a stage writes the same
bytes again, so dvc.lock does not change and ``dvc status`` is clean. Hashing the default's
cache (690 MB) takes about 2 s; each object is read once however many outputs link to it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import dvc_cache

CHUNK = 1 << 20


@dataclass(frozen=True)
class Corrupt:
    """An output (``path``) of ``stage`` whose cache objects (``objects``, absolute paths)
    do not hold the bytes their md5 names."""

    stage: str
    path: str
    objects: tuple[Path, ...]


def file_md5(path: Path) -> str:
    """The md5 of a file's bytes (DVC 3's object name)."""
    digest = hashlib.md5()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _object(base: Path, md5: str) -> Path:
    return base / md5[:2] / md5[2:]


def bad_objects(base: Path, md5: str, seen: dict[Path, bool]) -> list[Path]:
    """The objects of ``md5`` under ``base`` (``files/md5``) that are present and do not match
    their name: the object itself, or a ``.dir`` object's listing and the files it lists.
    A missing object is another check's (``pipeline.dvc_cache``); ``seen`` memoises."""

    def bad(path: Path, want: str) -> bool:
        if path not in seen:
            seen[path] = path.is_file() and file_md5(path) != want
        return seen[path]

    path = _object(base, md5)
    if not md5.endswith(".dir"):
        return [path] if bad(path, md5) else []
    if not path.is_file():
        return []
    if bad(path, md5.removesuffix(".dir")):
        return [path]
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return [path]
    return [p for e in entries if bad(p := _object(base, e["md5"]), e["md5"])]


def corrupt(root: Path) -> list[Corrupt]:
    """Outputs recorded in ``root``'s dvc.lock whose cache objects fail :func:`bad_objects`
    (DVC 2 entries, whose objects DVC hashed after changing line ends, are skipped)."""
    lock = root / "dvc.lock"
    if not lock.is_file():
        return []
    base = dvc_cache._cache_folder(root) / "files" / "md5"
    seen: dict[Path, bool] = {}
    out = []
    for stage, path, md5, legacy in dvc_cache.lock_outputs(lock.read_text(encoding="utf-8")):
        if legacy:
            continue
        bad = bad_objects(base, md5, seen)
        if bad:
            out.append(Corrupt(stage, path, tuple(bad)))
    return out


def rerun(stage: str) -> tuple[str, ...]:
    """The command that makes ``stage``'s outputs again (run by the doctor after its lock)."""
    return (sys.executable, "-m", "dvc", "repro", "-f", "-s", stage)


def _remove(root: Path, item: Corrupt) -> None:
    """Delete the bad objects and the workspace output (with hard links, the same bytes)."""
    for obj in item.objects:
        obj.unlink(missing_ok=True)
    target = root / item.path
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    else:
        target.unlink(missing_ok=True)


def findings(root: Path, make: Callable[..., Any]) -> list[Any]:
    """One ``make(what, repair, fix, then)`` (a ``pipeline.doctor.Finding``) per output whose
    cache object is corrupt: the repair deletes it and reruns the stage."""
    out = []
    for item in corrupt(root):
        first = item.objects[0].relative_to(root) if item.objects[0].is_relative_to(root) \
            else item.objects[0]  # fmt: skip
        more = f" and {len(item.objects) - 1} more" if len(item.objects) > 1 else ""
        out.append(make(
            f"{item.path} (output of {item.stage}): its DVC cache object {first}{more} no "
            "longer matches its md5 (changed in place through a hard link), so `dvc status` "
            "says up to date and `dvc checkout` or `dvc repro` bring back the changed bytes",
            f"delete the object and {item.path}, then rerun the stage "
            f"(`dvc repro -f -s {item.stage}`)",
            functools.partial(_remove, root, item), rerun(item.stage),
        ))  # fmt: skip
    return out
