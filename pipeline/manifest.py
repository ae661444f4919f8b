"""The shipped collections, checked against their manifests before anything is read from them.

``pipeline/resources/grep_biasir/manifest.json`` and ``pipeline/resources/genderbias_qa/
manifest.json`` list every file of their folder with its sha256, size and (CSV) data rows
(:func:`describe`).
A deleted, edited or added file would otherwise go unnoticed: Grep-BiasIR is read from a
glob, so a deleted category file silently leaves 20 queries without qrels (issue 32). The
``extract`` and ``transfer_data`` stages call :func:`verify` first; any difference stops them
with one line naming the file and the fix (``git checkout -- <path>``).

A maintainer who changes a shipped collection on purpose writes its manifest anew:
``python -m pipeline.manifest --write pipeline/resources/grep_biasir``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline import io
from pipeline.errors import InputError

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"


class ManifestError(InputError):
    """A shipped collection differs from its manifest (a file missing, edited or added)."""


def describe(path: Path) -> dict[str, Any]:
    """``sha256``, ``bytes`` and, for a CSV, ``rows`` (data records after the header). The
    hash reads line ends as LF, so a checkout that writes CRLF (git's ``core.autocrlf`` on
    Windows) matches; ``bytes`` is the size on disk (shown in messages only)."""
    raw = path.read_bytes()
    data = raw.replace(b"\r\n", b"\n")
    out: dict[str, Any] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(raw)}
    if path.suffix == ".csv":
        lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
        out["rows"] = max(sum(1 for _ in csv.reader(lines)) - 1, 0)
    return out


def build(folder: Path) -> dict[str, Any]:
    """The manifest of ``folder``: every file but the manifest itself (sorted names)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    return {"files": {p.relative_to(folder).as_posix(): describe(p) for p in files}}


def _shown(folder: Path) -> str:
    """``folder`` relative to the working directory when it lies inside it (the repository
    root, where a stage runs), so the ``git checkout`` of a fix can be pasted."""
    try:
        return folder.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(folder)


def _rows(entry: dict[str, Any]) -> str:
    return f", {entry['rows']} data rows" if "rows" in entry else ""


def differences(folder: Path) -> list[tuple[str, str]]:
    """``(file, what differs)`` between ``folder`` and its manifest, in file order."""
    path = folder / MANIFEST
    if not path.is_file():
        return [(MANIFEST, "is missing (the list of the shipped files and their sha256)")]
    try:
        shipped: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["files"]
    except (ValueError, KeyError, TypeError) as e:
        return [(MANIFEST, f"is not a readable manifest ({e})")]
    found = build(folder)["files"]
    out = []
    for name in sorted(set(shipped) | set(found)):
        want, got = shipped.get(name), found.get(name)
        if want is None:
            out.append((name, "is not a shipped file (the loader may read it)"))
        elif got is None:
            out.append((name, f"is missing (shipped: {want['bytes']} bytes{_rows(want)})"))
        elif got["sha256"] != want["sha256"]:
            out.append((name, f"was changed: {got['bytes']} bytes{_rows(got)}, sha256 "
                              f"{got['sha256'][:12]}…; shipped: {want['bytes']} bytes"
                              f"{_rows(want)}, sha256 {want['sha256'][:12]}…"))  # fmt: skip
    return out


def verify(folder: Path, name: str) -> None:
    """Stop with one line when ``folder`` (the collection ``name``) differs from its
    manifest: the first file that differs, how, how many others do, and the fix."""
    diffs = differences(folder)
    if not diffs:
        log.info("%s: %s matches its manifest", name, _shown(folder))
        return
    (file, what), more = diffs[0], len(diffs) - 1
    where = _shown(folder)
    others = f" (and {more} other file{'s' * (more > 1)} differ)" if more else ""
    added = "is not a shipped file" in what
    fix = (f"delete it (`git clean -n -- {where}` lists such files)" if added
           else f"restore it: `git checkout -- '{where}/{file}'`")  # fmt: skip
    raise ManifestError(
        f"{where}/{file} {what}: the {name} collection differs from the shipped one "
        f"({MANIFEST}){others}; nothing was read. Fix: {fix} (or reinstall the package). If "
        f"you changed it on purpose, write its manifest anew: `python -m pipeline.manifest "
        f"--write {where}`"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.manifest", description=__doc__)
    ap.add_argument("folders", nargs="+", help="shipped collection folders")
    ap.add_argument("--write", action="store_true", help="write the manifests anew")
    ns = ap.parse_args(argv)
    status = 0
    for folder in map(Path, ns.folders):
        if ns.write:
            text = json.dumps(build(folder), indent=2, sort_keys=True) + "\n"
            io.write_text(text, folder / MANIFEST)
            sys.stdout.write(f"wrote {folder / MANIFEST}\n")
            continue
        for file, what in differences(folder):
            sys.stdout.write(f"{folder / file}: {what}\n")
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
