"""Outputs that DVC failed to copy into its cache, found before they are lost (issue 32).

When DVC 3.67 cannot copy a stage's output into its cache (a full disk: ENOSPC; a file-size
limit; a quota), it logs ``failed to transfer …`` and goes on: the command exits 0, dvc.lock
records the output, the cache lacks it, and the next ``dvc checkout`` (another experiment, a
new clone, ``dvc exp apply``) cannot bring it back. The copies that failed stay in the cache
as partial ``*.tmp`` files, filling the disk further.

- :func:`guard` runs at the start of every stage that DVC runs (``stages/common.py``): an
  output of an earlier stage that the cache lacks stops the run there, with one line naming
  it and the repair. So a failed copy makes the run fail at its next stage; only the last
  stage of a run (a ``dvc repro -s STAGE``) is caught at the next run, or by the doctor.
  Under ``dvc repro --no-commit`` (outputs kept out of the cache on purpose) it checks
  nothing.
- :func:`uncached` and :func:`partial_files` are what ``python -m pipeline.doctor`` reports
  and repairs (deleting the partial files, then ``dvc commit -f`` of each stage whose
  outputs the cache lacks).

An output counts as not cached only when DVC's own check says so (its cache lacks the object
dvc.lock records, or one of a directory's files) *and* its workspace copy is there and is
what dvc.lock records: a fresh clone, whose outputs are neither in the workspace nor in the
cache, has nothing to report.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import SetupError

TMP_SUFFIX = ".tmp"


class CacheError(SetupError):
    """An output that a stage wrote is not in the DVC cache: copying it there failed."""


@dataclass(frozen=True)
class Uncached:
    """An output (``path``, relative to the repository) of ``stage`` (its name in dvc.yaml)
    that the cache lacks."""

    stage: str
    path: str


def _outputs(repo: Any) -> Iterator[tuple[Any, Any]]:
    """``(stage, out)`` of every cached output that dvc.lock records."""
    for stage in repo.index.stages:
        for out in stage.outs:
            if out.use_cache and out.hash_info:
                yield stage, out


def uncached(root: Path, only: set[tuple[str, str]] | None = None) -> list[Uncached]:
    """Outputs of ``root`` in the workspace, as dvc.lock records them, that the cache lacks
    (module docstring), by DVC's own checks; ``only``: just these ``(stage, path)``. Reads
    DVC's state without its repository lock (read only), so a stage can call it while
    ``dvc repro`` holds the lock."""
    from dvc.repo import Repo

    found = []
    with Repo(str(root)) as repo:
        for stage, out in _outputs(repo):
            key = (stage.name, str(out.def_path))
            if only is not None and key not in only:
                continue
            if out.changed_cache() and out.exists and not out.changed_checksum():
                found.append(Uncached(*key))
    return found


def suspects(root: Path) -> set[tuple[str, str]]:
    """``(stage, path)`` of the outputs dvc.lock records whose workspace copy exists but
    whose object (or one of a directory's files) the cache folder lacks: read from dvc.lock
    (:func:`lock_outputs`), dvc.yaml (``cache: false`` outputs are never cached) and the
    cache folder directly, so it takes milliseconds where DVC's own checks take seconds. A
    superset of :func:`uncached` (it does not compare the workspace copy with dvc.lock)."""
    lock_path = root / "dvc.lock"
    if not lock_path.is_file():
        return set()
    not_cached = _cache_false(root)
    cache = _cache_folder(root)
    found = set()
    for name, path, md5, legacy in lock_outputs(lock_path.read_text(encoding="utf-8")):
        if path in not_cached(name) or not (root / path).exists():
            continue
        if not _in_cache(cache, md5, legacy):
            found.add((name, path))
    return found


def lock_outputs(text: str) -> Iterator[tuple[str, str, str, bool]]:
    """``(stage, path, md5, legacy)`` of each output in dvc.lock's text, read line by line
    (YAML's Python constructor takes a third of a second on the default's 9,500 lines, at
    the start of each of its 139 stages). The layout is DVC's own dumper's: a stage name
    indented 2, its ``outs:`` 4, ``- path:`` items with ``hash:`` and ``md5:`` 6; ``legacy``:
    a DVC 2 entry (no ``hash: md5``), whose object lies under the cache's top folder."""
    stage = section = ""
    item: dict[str, str] = {}

    def done() -> Iterator[tuple[str, str, str, bool]]:
        if item.get("path") and item.get("md5"):
            yield stage, item["path"], item["md5"], item.get("hash") != "md5"
        item.clear()

    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if indent in (2, 4) and body.endswith(":") and not body.startswith("-"):
            yield from done()
            stage, section = (_scalar(body[:-1]), "") if indent == 2 else (stage, body[:-1])
        elif section == "outs" and indent == 4 and body.startswith("- "):
            yield from done()
            key, _, value = body[2:].partition(": ")
            item[key] = _scalar(value)
        elif section == "outs" and indent == 6 and ": " in body:
            key, _, value = body.partition(": ")
            item[key] = _scalar(value)
    yield from done()


def _scalar(text: str) -> str:
    """A YAML scalar as written in dvc.lock (quoted when it needs to be)."""
    if text[:1] in ("'", '"'):
        import yaml

        return str(yaml.safe_load(text))
    return text


def _yaml(path: Path) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


def _cache_false(root: Path) -> Any:
    """``name → paths``: the ``cache: false`` outputs dvc.yaml declares for stage ``name``
    (``group@key`` of a ``foreach``: ``${key}`` and ``${item}`` filled in)."""
    stages = (_yaml(root / "dvc.yaml") or {}).get("stages") or {}

    def paths(name: str) -> set[str]:
        group, _, key = name.partition("@")
        body = stages.get(group) or {}
        body = body.get("do", body) if key else body
        out = set()
        for field in ("outs", "metrics", "plots"):
            for item in body.get(field) or []:
                if isinstance(item, dict):
                    out |= {k for k, v in item.items() if isinstance(v, dict) and
                            v.get("cache") is False}  # fmt: skip
        return {p.replace("${key}", key).replace("${item}", key) for p in out}

    return paths


def _cache_folder(root: Path) -> Path:
    """``cache.dir`` of ``.dvc/config`` or ``.dvc/config.local`` (a queued experiment's
    workspace points there to the repository's cache), relative to ``.dvc/``; default
    ``.dvc/cache``."""
    from configobj import ConfigObj

    folder = root / ".dvc" / "cache"
    for name in ("config", "config.local"):
        path = root / ".dvc" / name
        if path.is_file():
            value = ConfigObj(str(path)).get("cache", {}).get("dir")
            folder = (root / ".dvc" / value) if value else folder
    return folder


def _in_cache(cache: Path, md5: str, legacy: bool) -> bool:
    """Whether the cache folder has object ``md5`` (a ``.dir`` object: and each file of it)."""
    base = cache if legacy else cache / "files" / "md5"
    path = base / md5[:2] / md5[2:]
    if not path.is_file():
        return False
    if not md5.endswith(".dir"):
        return True
    import json

    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return all((base / e["md5"][:2] / e["md5"][2:]).is_file() for e in entries)


def cache_dir(root: Path) -> Path:
    """The repository's DVC cache folder (``cache.dir``; default ``.dvc/cache``)."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        return Path(repo.cache.local_cache_dir)


def partial_files(root: Path) -> list[Path]:
    """Partial files of copies into the DVC cache that failed (``*.tmp``: DVC writes a copy
    under a temporary name and renames it when complete). Only meaningful while no DVC
    command runs: a running one has its own copies in flight."""
    folder = cache_dir(root)
    found = []
    for parent, _, names in os.walk(folder):
        found += [Path(parent, n) for n in names if n.endswith(TMP_SUFFIX)]
    return sorted(found)


def _no_commit() -> bool:
    """Whether the DVC command running this stage was asked to keep outputs out of the cache
    (``dvc repro --no-commit``, ``dvc exp run --no-commit``): then none is there on purpose."""
    import psutil

    try:
        return any("--no-commit" in p.cmdline() for p in psutil.Process().parents()[:4])
    except psutil.Error:
        return False


def guard(root: Path) -> None:
    """Stop (:class:`CacheError`, one line) when an output of an earlier stage is not in the
    cache: DVC could not copy it there and went on (module docstring). Quick
    (:func:`suspects`); DVC's own checks only confirm what it finds."""
    if _no_commit():
        return
    found = suspects(root)
    missing = uncached(root, only=found) if found else []
    if not missing:
        return
    first = missing[0]
    more = f" (and {len(missing) - 1} other outputs)" if len(missing) > 1 else ""
    raise CacheError(
        f"{first.path} (output of {first.stage}) is not in the DVC cache{more}, so a later "
        "`dvc checkout` would lose it: DVC could not copy it there (a full disk, a file-size "
        "limit or a quota; DVC logs `failed to transfer` and goes on without an error), or "
        "the cache was moved or emptied. Make room for the cache (`dvc cache dir` shows "
        "where it is; `df -h` there), then run `python -m pipeline.doctor --fix` (it deletes "
        "DVC's partial cache files and copies such outputs into the cache) and rerun."
    )
