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
`NOT_RESULTS` (dated history, facts of the shipped data or of other projects, with why).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
VALUE = re.compile(r"<!-- value ([\w.@+:-]+) -->(.*?)<!-- /value -->")
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


# --- the stage graph (dvc.yaml, foreach expanded over params.yaml's methods) -------------


def _expand(value: Any, key: str, item: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        out = value.replace("${key}", key)
        return re.sub(r"\$\{item\.(\w+)\}", lambda m: str(item.get(m.group(1), "")), out)
    if isinstance(value, list):
        return [_expand(v, key, item) for v in value]
    if isinstance(value, dict):
        return {_expand(k, key, item): _expand(v, key, item) for k, v in value.items()}
    return value


@cache
def stages(root: Path) -> dict[str, dict[str, Any]]:
    """Every stage of dvc.yaml by name (`train@baseline`), its `foreach` expanded."""
    spec = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    methods = _params(root)["methods"]
    out: dict[str, dict[str, Any]] = {}
    for name, stage in spec.items():
        if "foreach" in stage:
            for key, item in methods.items():
                out[f"{name}@{key}"] = _expand(stage["do"], key, item)
        else:
            out[name] = stage
    return out


def _paths(entries: Sequence[Any]) -> list[str]:
    return [next(iter(e)) if isinstance(e, dict) else str(e) for e in entries or []]


def _reads(dep: str, out: str) -> bool:
    """Whether a stage depending on `dep` reads the output `out` (a file or folder in it, or
    a folder holding it: `report` depends on `eval`, the folder of every `eval/<method>`)."""
    return dep == out or dep.startswith(out + "/") or out.startswith(dep + "/")


def upstream(root: Path, targets: Sequence[str]) -> list[str]:
    """The stages `dvc repro TARGETS` runs from an empty workspace: the targets and every
    stage whose outputs they read, transitively."""
    graph = stages(root)
    producer = {out: name for name, s in graph.items() for out in _paths(s.get("outs", []))}
    seen: list[str] = []
    todo = list(targets)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        for dep in _paths(graph[name].get("deps", [])):
            todo += [s for out, s in producer.items() if _reads(dep, out)]
    return seen


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

    splits = tuple(_params(root)["transfer"]["splits"])
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
    "repro.report": lambda r: _about(_repro(r)["by_family_s"]["report"]),
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
        int(_quick_set(r, "transfer.max_queries")) * _params(r)["candidates"]["top_k"]
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


def _reruns(root: Path, key: str) -> list[str]:
    """The stages a change of params key `key` reruns: those that declare it (or a section
    holding it) and every stage downstream of their outputs (dvc.yaml's graph)."""
    graph = stages(root)

    def declares(s: Mapping[str, Any]) -> bool:
        names = [next(iter(p)) if isinstance(p, dict) else str(p) for p in s.get("params", [])]
        return any(key == n or key.startswith(n + ".") for n in names)

    ran = [n for n, s in graph.items() if declares(s)]
    changed = True
    while changed:
        outs = {o for n in ran for o in _paths(graph[n].get("outs", []))}
        more = [n for n, s in graph.items() if n not in ran and any(
            _reads(d, o) for d in _paths(s.get("deps", [])) for o in outs)]  # fmt: skip
        ran += more
        changed = bool(more)
    return [n for n in graph if n in ran]  # in dvc.yaml's order


def _rerun_text(root: Path, key: str) -> str:
    """`_reruns` as prose: single stages by name, a `foreach` family as one `name@` entry."""
    names, methods = _reruns(root, key), _methods(root)
    every = {n.split("@")[0] for n in names if "@" in n}
    every = {f for f in every if all(f"{f}@{m}" in names for m in methods)}
    shown = list(dict.fromkeys(n.split("@")[0] + "@" if n.split("@")[0] in every else n
                               for n in names))  # fmt: skip
    each = [f"`{n}`" + (" of every method" if n.endswith("@") else "") for n in shown]
    return f"{', '.join(each[:-1])} and {each[-1]}" if len(each) > 1 else "".join(each)


def _quick_set(root: Path, key: str) -> str:
    cmd = quick_command(root)
    sets = [cmd[i + 1] for i, w in enumerate(cmd[:-1]) if w in ("-S", "--set-param")]
    found = [s.split("=", 1)[1] for s in sets if s.split("=", 1)[0] == key]
    if not found:
        raise KeyError(f"README quick profile: no `-S {key}=…`")
    return found[-1]


PREFIXES: dict[str, Callable[[Path, str], str]] = {
    "result.": _result,
    "dvc.rerun.": _rerun_text,
    "dvc.rerun_count.": lambda r, k: str(len(_reruns(r, k))),
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


# --- numbers in prose that no marker covers ----------------------------------------------

NUMBER = re.compile(
    r"(?<![\w.@/=-])(\d[\d,.]*\d|\d)\s?(%|min\b|minutes?\b|s\b|h\b|MB|GB|MiB|GiB|KB|kB|stages?\b"
    r"|methods?\b|seeds?\b|folds?\b|quer(?:y|ies)\b|models?\b|columns\b|files\b|tests\b|×"
    r"|documents\b|triples\b|passages\b|steps\b|questions\b|pairs\b)"
)
"""A number with a unit of runs, sizes, counts or times."""


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """`(line number, line)` of prose: not in a fenced block, a table row or the generated
    results block, with marked values and HTML comments removed."""
    fenced = results = False
    for i, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        if "<!-- results:start -->" in line:
            results = True
        if "<!-- results:end -->" in line:
            results = False
            continue
        if fenced or results or stripped.startswith("|"):
            continue
        yield i, re.sub(r"<!--.*?-->", "", VALUE.sub("", line))


def unused_exemptions(paths: Sequence[Path], exempt: Mapping[str, Sequence[tuple[str, str]]]
                      ) -> list[str]:  # fmt: skip
    """Exemptions whose text no longer stands on a prose line with a number of its own."""
    lines = {p.name: [line for _, line in prose_lines(p.read_text(encoding="utf-8"))]
             for p in paths}  # fmt: skip
    return [f"NOT_RESULTS[{name!r}]: {snippet!r} is on no prose line with a number (remove it)"
            for name, entries in exempt.items() for snippet, _ in entries
            if not any(snippet in line and NUMBER.search(snippet) for line in lines.get(name, []))
            ]  # fmt: skip


def unmarked_numbers(path: Path, exempt: Mapping[str, Sequence[tuple[str, str]]]) -> list[str]:
    """One message per number with a unit in `path`'s prose that is neither a marked value
    nor exempt (`exempt[file name]`: `(text on its line, why)`)."""
    allowed = exempt.get(path.name, ())
    problems = []
    for i, line in prose_lines(path.read_text(encoding="utf-8")):
        for m in NUMBER.finditer(line):
            if any(snippet in line and m.group(0) in snippet for snippet, _ in allowed):
                continue
            problems.append(
                f"{path.name}:{i}: {m.group(0)!r} is a number about runs, sizes, counts or "
                "times: generate it (`<!-- value NAME -->…<!-- /value -->`, "
                "pipeline/report/doc_values.py) or list it in NOT_RESULTS with why"
            )
    return problems


DATED = "a dated record: what was measured or concluded then, not regenerated"
NOT_RESULTS: dict[str, list[tuple[str, str]]] = {
    "README.md": [
        ("cost ~10 s of start-up each", DATED + " (the rerank stages before issue 21)"),
        ("of 17–18% of the female/male documents", "a fact of the shipped data (decisions.md)"),
    ],
    "decisions.md": [
        ("0.0973 ± 0.0017 over 3 seeds", DATED + " (until 2026-11-26)"),
        ("neutral version first on 61% of the queries instead of", DATED + " (lr 6e-4 run)"),
        ("78%; 3 seeds, 5 folds, 2026-11-26", DATED + " (lr 6e-4 run)"),
        ("(default run of 2026-11-26: 3 seeds × 2 folds, 117 queries)",
         DATED + ": the interpretation of that run; re-read it after a new default run"),
        ("27 methods compared", DATED + ": the run in the section's title"),
        ("ranks the neutral version first less often (65%", DATED),
        ("vs 75% of queries, sign test", DATED),
        ("ranks the neutral version first on 51% of the queries instead of 75%", DATED),
        ("last logged batch of seed 1 fold 0", DATED),
        ("(one trained layer, ~58 queries per", DATED),
        ("difference on any headline metric (with 2 folds", DATED),
        ("default moved to 3 seeds × 2 folds", DATED + " (2026-11-25)"),
        ("Grep-BiasIR triples (1,218 triples", DATED + " (2026-11-25)"),
        ("45% of the positives have", DATED + " (2026-11-25)"),
        ("(2.7×): buckets 0–6", DATED + " (2026-11-25)"),
        ("drawn together in random order for about 80% of", DATED + " (2026-11-25)"),
        ("the last 20% of steps", DATED + " (2026-11-25)"),
        ("0.93 → 0.20 (4.6×) and the neutral 45%", DATED + " (2026-11-25)"),
        ("Target (issue 21): the README's first command in ≤ 40 minutes", "issue 21's target"),
        ("With 5 folds", "the alternative the default did not take (5 folds)"),
        ("they would train 5 models per seed", "the alternative the default did not take"),
        ("default from 40 to 25.9 min (2026-11-25)", DATED),
    ],
    "dependencies.md": [
        ("Installs from wheels in about 10 s", DATED + " (installing python-terrier)"),
        ("adds about 80 MB", DATED + " (installing python-terrier)"),
        ("20 s), then `bash scripts/setup.sh`", DATED + " (running scripts/lock.sh)"),
    ],
    "paper-scale.md": [
        ("estimated 35 min", "ir_datasets' own estimate"),
        ("The 1,765 query set", "the name of a shipped query set"),
        ("45 min and", DATED + " (benchmarks/README.md, Paper-scale rehearsal)"),
        ("13.5 GiB peak", DATED + " (benchmarks/README.md, Paper-scale rehearsal)"),
        ("17–18% of its F/M documents", "a fact of the shipped data (decisions.md)"),
        ("(1,024 triples)", "arithmetic of the example: 64 batches of 16"),
        ("a window is 0.03% of the run", "arithmetic of the example: 1,024 of 3M"),
        ("2.4 GiB at a tenth", DATED + " (benchmarks/README.md, TREC Fair 2022 rehearsal)"),
        ("a projected 24 GiB at full size, more than a 24 GiB machine has", DATED),
        ("hold about 2.1M relevant articles for 50 queries", "a fact of the TREC Fair data"),
    ],
}
"""Numbers with a unit that stay typed, each with why: dated records (what a run or an
experiment showed on its date; the text says when), facts of data or tools, arithmetic of an
example. Every other such number in prose is a marked value."""
