"""Numbers in the docs' prose that come from results: generated, never typed.

A number about runs, sizes, counts or times in README.md, docs/*.md or benchmarks/README.md is
written between two HTML comments (invisible on GitHub) that name its source:
`<!-- value repro.minutes -->63.1<!-- /value -->`. `SOURCES` maps each name to a function that
computes the text from the repository: `benchmarks/results/*.jsonl` (the benchmark scripts'
rows), `params.yaml`, `dvc.yaml` (the stage graph), `dvc.lock` (output sizes) and the committed
metrics. `python -m pipeline.report.docs --write` rewrites every marked value (after a new
`dvc repro`, a benchmark run, or a change of params); `tests/unit/test_docs.py` fails when a
marked value differs from its source, names a source that does not exist, or when a number
with a unit of runs, sizes, counts or times stands in prose unmarked and is not in
`NOT_RESULTS` (pipeline/report/doc_numbers.py: dated history, facts of the shipped data or of
other projects, with why).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pipeline.report.stage_graph import (
    params_table,
    plugin_table,
    rerun_text,
    reruns,
    stages,
    upstream,
)

ROOT = Path(__file__).resolve().parents[2]
VALUE = re.compile(r"<!-- value ([\w.@+:-]+) -->(.*?)<!-- /value -->", re.S)  # a table: lines
RESULTS = Path("benchmarks/results")


@cache
def _rows(root: Path, name: str) -> tuple[dict[str, Any], ...]:
    path = root / RESULTS / f"{name}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return tuple(json.loads(line) for line in lines if line.strip())


def _repro(root: Path) -> dict[str, Any]:
    """The last `bench_repro --empty-cache` row: the default run from an empty cache."""
    rows = [r for r in _rows(root, "repro") if r.get("mode") == "empty cache"]
    if not rows:
        raise KeyError(f"{RESULTS}/repro.jsonl: no `empty cache` row; run bench_repro")
    return rows[-1]


@cache
def _params(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    return out


def _methods(root: Path) -> list[str]:
    return list(_params(root)["methods"])


def _controls(root: Path) -> list[str]:
    """The methods listed after params.yaml's `# Controls` comment under `methods:`."""
    text = (root / "params.yaml").read_text(encoding="utf-8").split("\nmethods:\n", 1)[1]
    after = text.split("\n  # Controls", 1)[1] if "\n  # Controls" in text else ""
    return [m for m in re.findall(r"^  ([^\s#:][^:]*):", after, re.M) if m in _methods(root)]


def _per(row: Mapping[str, Any], family: str) -> float:
    stages = [k for k in row["per_stage_s"] if k.startswith(f"{family}@")]
    return float(row["by_family_s"][family]) / max(len(stages), 1)


def _about(seconds: float) -> str:
    return f"{round(seconds, -1) if seconds >= 100 else round(seconds):.0f}"


def _grouped(n: float) -> str:
    return f"{n:,.0f}"


def quick_command(root: Path) -> list[str]:
    """The README's quick-profile command (between `<!-- quick:start -->` and
    `<!-- quick:end -->`) as arguments: what `benchmarks/bench_quick.py` times."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- quick:start -->", 1)[1].split("<!-- quick:end -->", 1)[0]
    code = block.split("```bash", 1)[1].split("```", 1)[0]
    return shlex.split(code.replace("\\\n", " "), comments=True)


def quick_targets(root: Path) -> list[str]:
    """The stage names the README's quick-profile command targets."""
    return [w for w in quick_command(root) if w in stages(root)]


def _quick_row(root: Path) -> dict[str, Any] | None:
    """The last `bench_quick` row that timed the README's current quick-profile command."""
    wanted = shlex.join(quick_command(root))
    rows = [r for r in _rows(root, "quick") if r["command"] == wanted]
    return rows[-1] if rows else None


def _quick_time(root: Path) -> str:
    row = _quick_row(root)
    if row is None:
        return "not yet measured for this command (`python -m benchmarks.bench_quick`)"
    return f"{row['wall_s'] / 60:.1f} min ({row['wall_s']:.0f} s) on {row['date']}"


@cache
def _grep_queries() -> int:
    from pipeline.data.grep_biasir import load_grep_biasir

    return int(load_grep_biasir().queries.height)


def _transfer_queries(root: Path) -> int:
    from pipeline.data.genderbias_qa import load_genderbias_qa

    splits = tuple(_params(root)["dataset"]["genderbias_qa"]["splits"])
    return int(load_genderbias_qa(splits=splits).queries.height)


# --- sizes ---------------------------------------------------------------------------------


def _lock_size(root: Path, path: str) -> int:
    lock = yaml.safe_load((root / "dvc.lock").read_text(encoding="utf-8"))
    for stage in lock["stages"].values():
        for out in stage.get("outs", []):
            if out["path"] == path:
                return int(out["size"])
    raise KeyError(f"dvc.lock: no output {path}")


def _mb(n: float) -> str:
    return f"{n / 1e6:.0f}"


def _frozen_bytes(root: Path) -> int:
    """Bytes of the frozen shard every fold model links: the shipped checkpoint's tensors
    outside the top `model.train_layers` layers (its safetensors header)."""
    import struct

    from pipeline.models.encoders import resolve_name

    p = _params(root)["model"]
    path = Path(resolve_name(p["name"])) / "model.safetensors"
    with path.open("rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    layers = {int(m) for k in header for m in re.findall(r"layer\.(\d+)\.", k)}
    top = {f"layer.{i}." for i in sorted(layers)[-(p["train_layers"] or 0) :]} if layers else set()
    sizes = {k: v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items()
             if k != "__metadata__"}  # fmt: skip
    return sum(n for k, n in sizes.items() if not any(t in k for t in top))


def _trained_bytes(root: Path) -> int:
    """Bytes of one fold model's trained shard: the checkpoint's top `model.train_layers`
    layers (the rest of `_frozen_bytes`'s header)."""
    import struct

    from pipeline.models.encoders import resolve_name

    path = Path(resolve_name(_params(root)["model"]["name"])) / "model.safetensors"
    with path.open("rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    total = sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items()
                if k != "__metadata__")  # fmt: skip
    return total - _frozen_bytes(root)


def _outputs_gb(root: Path) -> str:
    """The default's outputs on disk: every output's size in dvc.lock, the frozen shard
    counted once (every kept fold model hard-links the same cache file)."""
    lock = yaml.safe_load((root / "dvc.lock").read_text(encoding="utf-8"))
    outs = {o["path"]: int(o.get("size", 0)) for s in lock["stages"].values()
            for o in s.get("outs", [])}  # fmt: skip
    p = _params(root)
    kept = 1 if p["train"].get("keep_models") == "first" else len(p["train"]["seeds"] or [1])
    models = len(p["methods"]) * p["dataset"]["grep_biasir"]["folds"] * kept
    shared = _frozen_bytes(root) if p["model"].get("train_layers") else 0
    return f"{(sum(outs.values()) - (models - 1) * shared) / 1e9:.2f}"


# --- `dvc exp show` of the committed default --------------------------------------------


@cache
def _exp_show_header(root: Path) -> tuple[str, ...]:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "dvc", "exp", "show", "-n", "0", "--csv"],
                          cwd=root, capture_output=True, text=True, check=True)  # fmt: skip
    return tuple(proc.stdout.splitlines()[0].split(","))


def _exp_columns(root: Path) -> str:
    shown = [c for c in _exp_show_header(root) if c not in ("rev", "typ", "parent")]
    return _grouped(round(len(shown), -2))


def _exp_files(root: Path) -> str:
    files = {c.split(":", 1)[0] for c in _exp_show_header(root) if ".json:" in c}
    return str(len(files))


SOURCES: dict[str, Callable[[Path], str]] = {
    # what each params setting reruns (the params slices, pipeline/deps/slices.py)
    "dvc.params_table": params_table,
    "dvc.plugin_table": plugin_table,
    # the default run from an empty cache (benchmarks/results/repro.jsonl)
    "repro.minutes": lambda r: f"{_repro(r)['total_s'] / 60:.1f}",
    "repro.minutes_round": lambda r: f"{_repro(r)['total_s'] / 60:.0f}",
    "repro.seconds": lambda r: _grouped(_repro(r)["total_s"]),
    "repro.date": lambda r: str(_repro(r)["date"]),
    "repro.stages": lambda r: str(_repro(r)["stages"]),
    "repro.train_minutes": lambda r: f"{_repro(r)['by_family_s']['train'] / 60:.1f}",
    "repro.train_each": lambda r: _about(_per(_repro(r), "train")),
    "repro.evaluate_each": lambda r: _about(_per(_repro(r), "evaluate")),
    "repro.order_each": lambda r: _about(_per(_repro(r), "order")),
    "repro.features": lambda r: _about(_repro(r)["by_family_s"]["features"]),
    # params.yaml
    "params.methods": lambda r: str(len(_methods(r))),
    "params.published": lambda r: str(len(_methods(r)) - len(_controls(r))),
    "params.controls": lambda r: str(len(_controls(r))),
    "params.others": lambda r: str(len(_methods(r)) - 1),
    "params.seeds": lambda r: str(len(_params(r)["train"]["seeds"] or [1])),
    "params.folds": lambda r: str(_params(r)["dataset"]["grep_biasir"]["folds"]),
    "params.models_per_method": lambda r: str(
        len(_params(r)["train"]["seeds"] or [1]) * _params(r)["dataset"]["grep_biasir"]["folds"]
    ),
    "params.fold_models": lambda r: str(
        len(_methods(r)) * len(_params(r)["train"]["seeds"] or [1])
        * _params(r)["dataset"]["grep_biasir"]["folds"]
    ),
    "grep.queries": lambda r: str(_grep_queries()),
    # dvc.yaml
    "dvc.stages": lambda r: str(len(stages(r))),
    "quick.stages": lambda r: str(len(upstream(r, quick_targets(r)))),
    "quick.methods": lambda r: str(sum(t.startswith("evaluate@") for t in quick_targets(r))),
    "quick.left_out": lambda r: str(
        len(_methods(r)) - sum(t.startswith("evaluate@") for t in quick_targets(r))
    ),
    "quick.time": _quick_time,
    "quick.transfer_pairs": lambda r: _grouped(
        int(_quick_set(r, "dataset.genderbias_qa.max_queries")) * _params(r)["candidates"]["top_k"]
    ),
    "transfer.pairs": lambda r: _grouped(_transfer_queries(r) * _params(r)["candidates"]["top_k"]),
    "transfer.queries": lambda r: str(_transfer_queries(r)),
    # sizes (dvc.lock, benchmarks/results/storage.jsonl)
    "size.features_mb": lambda r: _mb(_lock_size(r, "data/features.safetensors")),
    "size.frozen_mb": lambda r: f"{_frozen_bytes(r) / 1e6:.1f}",
    "size.trained_mb": lambda r: f"{_trained_bytes(r) / 1e6:.1f}",
    "size.outputs_gb": _outputs_gb,
    # `dvc exp show` of the committed default (metrics/, dvclive/, params.yaml)
    "exp_show.columns": _exp_columns,
    "exp_show.files": _exp_files,
}


def _result(root: Path, spec: str) -> str:
    """`result.<file>.<key>[:<format>]`: `<key>` of the newest row of
    `benchmarks/results/<file>.jsonl`, formatted with `<format>` (e.g. `.1f`)."""
    path, _, fmt = spec.partition(":")
    name, key = path.split(".", 1)
    rows = _rows(root, name)
    if not rows:
        raise KeyError(f"{RESULTS}/{name}.jsonl: no rows")
    value: Any = rows[-1]
    for part in key.split("."):
        value = value[part]
    return format(value, fmt)


def _quick_set(root: Path, key: str) -> str:
    cmd = quick_command(root)
    sets = [cmd[i + 1] for i, w in enumerate(cmd[:-1]) if w in ("-S", "--set-param")]
    found = [s.split("=", 1)[1] for s in sets if s.split("=", 1)[0] == key]
    if not found:
        raise KeyError(f"README quick profile: no `-S {key}=…`")
    return found[-1]


PREFIXES: dict[str, Callable[[Path, str], str]] = {
    "result.": _result,
    "dvc.rerun.": rerun_text,
    "dvc.rerun_count.": lambda r, k: str(len(reruns(r, k))),
    "quick.set.": _quick_set,
}


def values_in(text: str) -> Iterator[re.Match[str]]:
    yield from VALUE.finditer(text)


def computed(name: str, root: Path = ROOT) -> str:
    for prefix, fn in PREFIXES.items():
        if name.startswith(prefix):
            return fn(root, name.removeprefix(prefix))
    if name not in SOURCES:
        known = [*sorted(SOURCES), *(f"{p}…" for p in PREFIXES)]
        raise KeyError(f"unknown value {name!r}; known: {', '.join(known)}")
    return SOURCES[name](root)


def value_problems(path: Path, root: Path = ROOT) -> list[str]:
    """One message per marked value of `path` that is unknown or differs from its source."""
    problems = []
    text = path.read_text(encoding="utf-8")
    for m in values_in(text):
        line = text.count("\n", 0, m.start()) + 1
        try:
            want = computed(m.group(1), root)
        except (KeyError, OSError, ValueError) as e:
            problems.append(f"{path.name}:{line}: value {m.group(1)!r}: {e}")
            continue
        if m.group(2) != want:
            problems.append(
                f"{path.name}:{line}: value {m.group(1)!r} is {m.group(2)!r}, its source gives "
                f"{want!r}; run `python -m pipeline.report.docs --write`"
            )
    return problems


def rewrite(text: str, root: Path = ROOT) -> str:
    """`text` with every marked value recomputed."""

    def sub(m: re.Match[str]) -> str:
        return f"<!-- value {m.group(1)} -->{computed(m.group(1), root)}<!-- /value -->"

    return VALUE.sub(sub, text)
