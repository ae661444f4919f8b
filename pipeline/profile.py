"""Which profile a metrics file comes from: digests of the params that produced it.

A targeted experiment (the README's quick profile: `dvc exp run … evaluate@baseline …`)
rewrites only its targets' `metrics/<method>.json`; the other methods' files stay from the
last full run, and `dvc metrics show` lists them side by side. So every evaluate stage
records, under `profile`, short digests of the params sections its numbers depend on:

- `profile.data`: `dataset` (its `name` and the sections of the training and held-out
  sources), `score`, `candidates`, `transfer`, `evaluate` (every row);
- `profile.model`: `model` (the shared keys and the section of `model.arch`) (`zero-shot`
  and every trained method);
- `profile.train`: `train` without the keys that only set how it runs (threads, worker
  processes, device, checkpoints, logging, which models are kept) (trained methods).

Rows whose digests differ come from different params. `eval/<row>/metrics.json` keeps the
three digests; the DVC metrics file `metrics/<row>.json` keeps one column, `profile`, the
`compact` digest of the three (so `dvc metrics show` fits a terminal), and
`python -m pipeline.profile` lists every metrics file against the workspace's params.yaml,
marking the stale ones and naming the part that differs. The
evaluate stages declare these sections as DVC params, so a digest is never older than the
numbers beside it: whatever changes it reruns the stage.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from pipeline import witness

log = logging.getLogger(__name__)

DATA = ("dataset", "score", "candidates", "transfer", "evaluate")
RUNTIME = ("threads", "workers", "device", "checkpoint_every", "log_every", "keep_models")
"""`train` keys that change how training runs, not what it computes."""


def digest(tree: Mapping[str, Any], sections: Sequence[str], drop: Sequence[str] = ()) -> str:
    """12 hex digits of the params `sections` (each without the keys `drop`)."""
    part = {s: _without(tree.get(s), drop) for s in sections}
    text = json.dumps(part, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _without(section: Any, drop: Sequence[str]) -> Any:
    if not isinstance(section, dict):
        return section
    return {k: section[k] for k in section if k not in drop}  # the dropped keys unread


def in_use(tree: Mapping[str, Any], model: bool) -> dict[str, Any]:
    """The sections the digests read, without those of the data sources and model families
    not in use (a source's own section is `dataset.<section>`, a family's `model.<arch>`): a
    setting of one changes no digest (issue 42); `model` only if `model`."""
    from pipeline import plugins
    from pipeline.sections import COMMON_MODEL_KEYS

    out = {s: tree.get(s) for s in (*DATA, "train")}
    dataset = tree.get("dataset") or {}
    names = (dataset.get("name", "grep-biasir"), (tree.get("transfer") or {}).get("name",
             "genderbias-qa"))  # fmt: skip
    keep = {"name", *(plugins.record("source", str(n)).section for n in names)}
    out["dataset"] = {k: dataset[k] for k in dataset if k in keep}
    if model:
        section = tree.get("model") or {}
        family = {*COMMON_MODEL_KEYS, str(section.get("arch", "bi_encoder"))}
        out["model"] = {k: section[k] for k in section if k in family}
    return out


def profile(tree: Mapping[str, Any], model: bool, train: bool) -> dict[str, str]:
    """The `profile` of a metrics file: `data` always; `model` for a row a model ranked;
    `train` for a trained method (the sources and families in use only: `in_use`)."""
    tree = in_use(tree, model)
    out = {"data": digest(tree, DATA)}
    if model:
        out["model"] = digest(tree, ("model",))
    if train:
        out["train"] = digest(tree, ("train",), RUNTIME)
    return out


def compact(parts: Mapping[str, str]) -> str:
    """One 12-hex digest of a row's profile parts (`metrics/<row>.json`'s ``profile``)."""
    return hashlib.sha256(json.dumps(dict(parts), sort_keys=True).encode()).hexdigest()[:12]


def read_tree(path: str | Path = "params.yaml") -> dict[str, Any]:
    tree = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(tree, dict):
        raise ValueError(f"{path}: expected a YAML mapping of params sections")
    return witness.raw(tree) if witness.enabled() else tree


def stale(recorded: Mapping[str, Any], current: Mapping[str, str],
          parts: Mapping[str, Any] | None = None) -> list[str]:  # fmt: skip
    """The parts of `current` whose digest the recorded profile lacks or differs from:
    `recorded["profile"]` is the parts themselves or their `compact` digest, whose parts
    (`eval/<row>/metrics.json`'s ``profile``) name the part when given; ``["params"]`` when
    only the compact digest differs and its parts are unknown."""
    mine = recorded.get("profile")
    if isinstance(mine, str):
        if mine == compact(current):
            return []
        if parts is None or compact(parts) != mine:
            return ["params"]
        mine = parts
    mine = mine if isinstance(mine, Mapping) else {}
    return [k for k, v in current.items() if mine.get(k) != v]


def listing(root: Path = Path(".")) -> tuple[list[str], int]:
    """One line per `metrics/<row>.json` of the params' rows: fresh, or stale and why;
    and the number of stale rows."""
    tree = read_tree(root / "params.yaml")
    rows = [("bm25", False, False), ("zero-shot", True, False)]
    rows += [(m, True, True) for m in tree.get("methods", {})]
    rows += [(e, True, (v or {}).get("base") != "zero-shot")
             for e, v in (tree.get("post") or {}).items()]  # fmt: skip
    lines, n_stale = [], 0
    for name, model, train in rows:
        path = root / "metrics" / f"{name}.json"
        rel = path.relative_to(root).as_posix()
        if not path.is_file():
            lines.append(f"missing  {rel}")
            n_stale += 1
            continue
        recorded = json.loads(path.read_text(encoding="utf-8"))
        full = root / "eval" / name / "metrics.json"
        detail = json.loads(full.read_text(encoding="utf-8")) if full.is_file() else {}
        parts = stale(recorded, profile(tree, model, train), detail.get("profile"))
        n_stale += bool(parts)
        why = ", ".join(f"profile.{p}" if p != "params" else "profile" for p in parts)
        lines.append(f"stale    {rel}  ({why}: not params.yaml's)" if parts else f"current  {rel}")
    return lines, n_stale


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.profile", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--repo", type=Path, default=Path("."), help="the repository (default: here)")
    ns = ap.parse_args(argv)
    lines, n_stale = listing(ns.repo)
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    sys.stdout.write(f"{n_stale} of {len(lines)} metrics files do not come from params.yaml; "
                     "`dvc repro` updates them\n" if n_stale else
                     f"all {len(lines)} metrics files come from params.yaml\n")  # fmt: skip
    return 1 if n_stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
