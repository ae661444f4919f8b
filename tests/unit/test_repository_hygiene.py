"""What git tracks works on any machine: no symbolic link points outside the repository, and
no tracked text names an absolute path of a developer's machine (a fresh clone elsewhere has
neither the link's target nor that folder; issue 34 found a `.venv` link into another
machine's folder and CI stayed green only where it resolved).

The path rule (``MACHINE_PATH``), chosen to have no false positives here: a path *start*
(not preceded by a word character, `.`, `~` or `-`, so `.dvc/tmp/`, `network/` and URLs'
paths are not matched) of `/work/<name>`, `/root/<name>`, `/home/<user>/`, `/Users/<user>/`,
a Windows user folder (`C:` backslash `Users` backslash, one or two backslashes as written in
code), macOS's per-user temporary folders (under `/private/var`), or a folder pytest or
`tempfile` made in `/tmp` (`pytest-of-<user>`, `tmp<8 characters>`). `/tmp/<name>` itself is
allowed: the README's commands use it as "a fresh folder" (pipeline/report/docs.py runs them
in a sandbox in its place), as `/mnt/shared/...` stands for a user's own remote.

The planted cases below carry a `‹` inside each path, removed before use, so that this file
itself names no such path.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START = r"(?<![\w.~-])"
MACHINE_PATH = re.compile(
    START
    + r"(?:/(?:work|root)/[\w.-]"
    + r"|/home/[a-z_][\w.-]*/"
    + r"|/Users/[\w.-]+/"
    + r"|/private/var/(?:folders)/"
    + r"|/tmp/(?:pytest-of-|tmp[a-z0-9_]{8}\b))"
    + r"|\b[A-Za-z]:\\{1,2}(?:Users|Documents and Settings)\\"
)


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout


def outside_links(root: Path) -> list[str]:
    """``path -> target`` of every tracked symbolic link whose target (as committed to the
    index) is absolute or leaves the repository."""
    bad = []
    for entry in _git(root, "ls-files", "-s", "-z").split(b"\0"):
        if not entry.startswith(b"120000 "):
            continue
        meta, path = entry.decode().split("\t", 1)
        target = _git(root, "cat-file", "blob", meta.split()[1]).decode()
        inside = os.path.normpath(os.path.join(os.path.dirname(path), target))
        if os.path.isabs(target) or inside == ".." or inside.startswith("../"):
            bad.append(f"{path} -> {target}")
    return bad


def machine_paths(root: Path) -> list[str]:
    """``file:line: match`` for every tracked text file (not a link, not binary) that names
    an absolute path of a developer's machine (``MACHINE_PATH``)."""
    found = []
    for entry in _git(root, "ls-files", "-s", "-z").split(b"\0"):
        if not entry or entry.startswith(b"120000 "):
            continue
        path = entry.decode().split("\t", 1)[1]
        data = (root / path).read_bytes() if (root / path).is_file() else b""
        if b"\0" in data[:8192]:
            continue  # binary (Parquet, gzip, PNG)
        text = data.decode("utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            found += [f"{path}:{n}: {m.group(0)}" for m in MACHINE_PATH.finditer(line)]
    return found


def _checkout() -> Path:
    """The repository root; skips (saying why) where the tests run outside a git checkout."""
    inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=ROOT,
                            capture_output=True, text=True)  # fmt: skip
    if inside.stdout.strip() != "true":
        pytest.skip(f"{ROOT} is not a git checkout: nothing is tracked to check")
    return ROOT


def test_no_tracked_link_points_outside_the_repository() -> None:
    assert outside_links(_checkout()) == [], "untrack these links (git rm --cached), ignore them"


def test_no_tracked_text_names_a_path_of_a_developer_machine() -> None:
    assert machine_paths(_checkout()) == [], "write these paths relative to the repository"


PLANTED_BAD = [
    line.replace("‹", "")
    for line in (
        "venv = '/‹work/main/.venv'",
        "cache: /‹root/.cache/huggingface",
        "see /home/‹alice/fair-ranking/README.md",
        'open("/Users/‹bob/Desktop/run.trec")',
        r'"C:\\‹Users\\carol\\repo"',
        r"C:\‹Users\dave\repo",
        "left in /tmp/‹pytest-of-root/pytest-3/tiny0/repo",
        "written to /tmp/‹tmpab3k9x_q/out.json",
        "TMPDIR=/private/‹var/folders/xy/T/",
    )
]
VENV = "/‹work/main/.venv".replace("‹", "")
PLANTED_FINE = [
    "mkdir -p /tmp/grep && cd /tmp/grep",
    "dvc remote add -d shared /mnt/shared/fair-ranking-dvc",
    "`.dvc/tmp/rwlock` is cut",
    "https://github.com/o/work/blob/main/x.py",
    "~/work/notes and ../work/x and network/work/",
    "pipeline/train/work/ and a_root/x",
]


def _repo(tmp_path: Path, files: dict[str, str], links: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name, target in links.items():
        (root / name).symlink_to(target)
    _git(root, "add", "-A")
    return root


def test_the_rules_catch_planted_links_and_paths(tmp_path: Path) -> None:
    files = {f"bad{i}.txt": f"x\n{line}\n" for i, line in enumerate(PLANTED_BAD)}
    files |= {"fine.md": "\n".join(PLANTED_FINE) + "\n", "docs/real.md": "a file\n"}
    files["data.bin"] = "\0/‹work/main binary\n".replace("‹", "")  # binary: not read as text
    links = {
        ".venv": VENV,  # absolute: dangles on any other machine
        "up": "../outside",  # leaves the repository
        "docs/deep": "../../x",  # leaves it from a subfolder
        "docs/ok": "real.md",  # stays inside: allowed
        "ok2": "docs/real.md",
    }
    root = _repo(tmp_path, files, links)
    assert sorted(outside_links(root)) == [f".venv -> {VENV}", "docs/deep -> ../../x",
                                           "up -> ../outside"]  # fmt: skip
    found = machine_paths(root)
    assert sorted(f.split(":")[0] for f in found) == sorted(
        f"bad{i}.txt" for i in range(len(PLANTED_BAD))
    ), found
    assert all(":2: " in f for f in found), found
