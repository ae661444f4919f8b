"""What a failed ``dvc exp run`` leaves behind git's back (a check of ``pipeline.doctor``).

``dvc exp run -S key=value`` writes the experiment's values into ``params.yaml`` and runs.
When a stage fails (e.g. an offline ``-S dataset.name=trec-fair-2022``, whose extract needs
the network), DVC 3.67 stops with the experiment's params still in ``params.yaml`` and the
failed stage's outputs deleted, and it leaves git's index with the *committed* file's hash but
the *new* file's size and modification time. DVC's YAML writer keeps every comment and
column, so a changed value of the same length keeps the size; git then compares only sizes and
times, finds them equal, and ``git status``, ``git diff`` and ``git checkout params.yaml``
("Updated 0 paths") all take the file for the committed one. Only ``dvc status`` shows it.

The check hashes each file DVC writes (``params.yaml``, ``dvc.yaml``, ``dvc.lock``) and
compares it with git's index entry; a file that differs although git lists it as unchanged is
reported with the changed keys. The repair writes the index's version back (git then sees
the same bytes again) and, once DVC's lock is released, runs ``dvc checkout`` to restore the
outputs the failed run deleted. A change git does list (an edit of yours) is left alone.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from pipeline import io

WATCHED = ("params.yaml", "dvc.yaml", "dvc.lock")
CHECKOUT = (sys.executable, "-m", "dvc", "checkout")


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    return proc.stdout if proc.returncode == 0 else ""


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, Mapping):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for k, v in tree.items():
        out |= _flat(v, f"{prefix}.{k}" if prefix else str(k))
    return out


def changed_keys(old: str, new: str, limit: int = 4) -> str:
    """``key: old → new`` of the YAML keys whose values differ (at most ``limit``)."""
    try:
        a, b = _flat(yaml.safe_load(old)), _flat(yaml.safe_load(new))
    except yaml.YAMLError:
        return "its content differs"
    keys = [k for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
    shown = [f"{k}: {a.get(k)!r} → {b.get(k)!r}" for k in keys[:limit]]
    more = f", and {len(keys) - limit} more" if len(keys) > limit else ""
    return ", ".join(shown) + more if keys else "only its formatting differs"


def hidden_changes(root: Path) -> list[tuple[str, str, str]]:
    """``(file, committed text, workspace text)`` of each watched file whose bytes differ
    from git's index entry while git lists it as unchanged."""
    out = []
    for name in WATCHED:
        path = root / name
        staged = _git(root, "ls-files", "-s", "--", name).split()
        if not path.is_file() or len(staged) < 2:
            continue
        if _git(root, "hash-object", "--", name).strip() == staged[1]:
            continue
        if _git(root, "diff", "--name-only", "--", name).strip():
            continue  # git sees this change: an edit, not the failed run's
        out.append((name, _git(root, "cat-file", "blob", staged[1]), path.read_text()))
    return out


def findings(root: Path, make: Callable[..., Any]) -> list[Any]:
    """One ``make(what, repair, fix, then)`` (a ``pipeline.doctor.Finding``) per hidden change."""
    found = []
    for name, committed, current in hidden_changes(root):

        def restore(name: str = name, committed: str = committed) -> None:
            io.write_text(committed, root / name)  # new mtime: git re-reads it, finds it clean

        found.append(make(
            f"{name} is not the committed file although `git status` shows it clean "
            f"({changed_keys(committed, current)}): a failed `dvc exp run` left the "
            "experiment's values in it and git's index with the file's new size and time",
            f"write back git's version of {name}, then `dvc checkout` restores the outputs "
            "the failed run deleted (`dvc status` is then clean)",
            restore, CHECKOUT,
        ))  # fmt: skip
    return found
