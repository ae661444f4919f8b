"""Disk used by trained models: the DVC cache plus the workspace, each file counted once.

For each side it builds a throw-away git + DVC repository from a project tree (ours: this
working tree; naive: ``--naive-ref``, the commit before models were split into a frozen and a
trained shard, with its ``.dvc/config``), keeps the default params but only ``--method``
and ``train.max_steps`` = ``--max-steps`` (default 5: the bytes of a saved model do not
depend on how long it trained, only the minutes do), and measures the bytes under
``.dvc/cache`` and ``models`` the way ``du -sbc .dvc/cache models`` does (a file with several
hard links once):

1. after ``dvc repro train@<method>`` from an empty cache (5 fold models),
2. the increment of ``dvc exp run -S methods.<method>.loss.penalty.lambda=0.5 train@<method>``
   (one seed: the experiment retrains the method),
3. ours only: the increment of a further ``-S 'train.seeds=[1,2,3]'`` experiment.

Each side runs once (minutes of training, under ``nice``); the JSON row also has the link
count of each model file kind.

    python -m benchmarks.bench_storage [--method penalty_relevant] [--naive-ref f8c9685]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import parser, setup_logging, write_row

ROOT = Path(__file__).resolve().parents[1]
TREE = ("dvc.yaml", "params.yaml", "pipeline", "stages", ".dvc/config", ".dvc/plots")


def unique_bytes(*folders: Path) -> int:
    """Apparent size of every file under ``folders``, each inode once (``du -sbc``)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder in folders:
        for path in folder.rglob("*"):
            st = path.lstat()
            if path.is_file() and (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cmd`` in ``cwd`` under ``nice``, offline, this interpreter's tools first on PATH."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIPELINE_LOG="WARNING")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(["nice", "-n", "10", *cmd], cwd=cwd, env=env, text=True,
                          capture_output=True, check=False)  # fmt: skip
    if proc.returncode:
        raise SystemExit(f"{cmd} failed in {cwd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def make_repo(
    dest: Path, method: str | None, ref: str | None = None, max_steps: int | None = None
) -> Path:
    """A git + DVC repository of the project tree at ``ref`` (None: the working tree) with
    the default params, their methods restricted to ``method`` (None: all) and
    ``train.max_steps`` set to ``max_steps`` (None: the default)."""
    dest.mkdir(parents=True)
    if ref is None:
        for name in TREE:
            src, out = ROOT / name, dest / name
            out.parent.mkdir(parents=True, exist_ok=True)
            copy = shutil.copytree if src.is_dir() else shutil.copy
            copy(src, out)
    else:
        archive = subprocess.run(["git", "archive", ref, *TREE], cwd=ROOT, capture_output=True,
                                 check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x"], input=archive, cwd=dest, check=True)
    if method is not None or max_steps is not None:
        params = yaml.safe_load((dest / "params.yaml").read_text())
        if method is not None:
            params["methods"] = {method: params["methods"][method]}
            params["controls"] = {}  # the default's controls name the methods left out
        if max_steps is not None:
            params["train"]["max_steps"] = max_steps
        (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        if (dest / "pipeline" / "deps").is_dir():  # per-method stages follow params' methods
            run([sys.executable, "-m", "pipeline.deps", "--write"], dest)
    config = (dest / ".dvc" / "config").read_text()
    (dest / ".dvc" / "config").unlink()
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "b@example.org"],
                ["git", "config", "user.name", "bench"],
                [sys.executable, "-m", "dvc", "init", "-q", "--force"]):  # fmt: skip
        run(cmd, dest)
    (dest / ".dvc" / "config").write_text(config)
    run(["git", "add", "-A"], dest)
    run(["git", "commit", "-qm", "bench"], dest)
    return dest


def links(repo: Path, method: str) -> dict[str, int]:
    """Hard-link count of each weight file of the first fold model."""
    model = repo / "models" / method / "fold-0"
    return {p.name: p.stat().st_nlink for p in sorted(model.glob("*.safetensors"))}


def measure(repo: Path, method: str, seeds: bool) -> dict[str, Any]:
    dvc = [sys.executable, "-m", "dvc"]
    cache, models = repo / ".dvc" / "cache", repo / "models"
    start = time.perf_counter()
    run([*dvc, "repro", f"train@{method}"], repo)
    row: dict[str, Any] = {"repro_s": round(time.perf_counter() - start, 1)}
    row["after_repro_bytes"] = unique_bytes(cache, models)
    row["links"] = links(repo, method)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "repro"], repo)
    lam = f"methods.{method}.loss.penalty.lambda=0.5"
    run([*dvc, "exp", "run", "-S", lam, f"train@{method}"], repo)
    row["exp_1_seed_bytes"] = unique_bytes(cache, models) - row["after_repro_bytes"]
    if seeds:
        before = unique_bytes(cache, models)
        run([*dvc, "exp", "run", "-S", "train.seeds=[1,2,3]", f"train@{method}"], repo)
        row["exp_3_seeds_bytes"] = unique_bytes(cache, models) - before
    return row


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--method", default="penalty_relevant", help="a method with a lambda")
    p.add_argument("--naive-ref", default="f8c9685", help="git ref of the full-checkpoint side")
    p.add_argument("--work", type=Path, default=None, help="folder for the repositories")
    p.add_argument("--no-naive", action="store_true", help="measure ours only")
    p.add_argument("--max-steps", type=int, default=5, help="train.max_steps of every run")
    args = p.parse_args()
    setup_logging()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-storage-"))
    row: dict[str, Any] = {"method": args.method, "naive_ref": args.naive_ref,
                           "max_steps": args.max_steps}  # fmt: skip
    sides = (("ours", None), ("naive", args.naive_ref))[: 1 if args.no_naive else 2]
    for side, ref in sides:
        repo = make_repo(work / side, args.method, ref, args.max_steps)
        row[side] = measure(repo, args.method, seeds=side == "ours")
        print(side, row[side], flush=True)
    write_row("storage", row, args.out)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
