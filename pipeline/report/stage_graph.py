"""The stage graph of dvc.yaml, its `foreach` stages expanded over params.yaml's methods:
what `dvc repro TARGETS` runs from an empty workspace (`upstream`) and what a change of a
params key reruns (`reruns`), for the numbers and lists the docs generate
(pipeline/report/doc_values.py). A stage reads another's output when one of its deps is that
output, a file or folder inside it, or a folder holding it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pipeline.deps import records, slices


@cache
def _params(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    return out


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
    """Every stage of dvc.yaml by name (`train@baseline`), its `foreach` expanded over the
    generated `vars` table it names (`method_code`, `post_code`, `eval_code`)."""
    doc = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))
    tables = {k: t or {} for v in doc.get("vars") or [] for k, t in v.items()}
    methods = _params(root)["methods"]
    out: dict[str, dict[str, Any]] = {}
    for name, stage in doc["stages"].items():
        if "foreach" in stage:
            table = tables.get(str(stage["foreach"]).strip("${}"), methods)
            for key, item in table.items():
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


def readers(root: Path, key: str) -> list[str]:
    """The stages whose params slice holds `key` (one of its keys, a section holding it, or a
    key inside it, not a dropped one: `pipeline.deps.slices`)."""
    held = slices.held(_params(root))

    def holds(k: str, drop: set[str]) -> bool:
        under = key.startswith(k + ".") and key[len(k) + 1 :].split(".")[0] not in drop
        return key == k or under or k.startswith(key + ".")

    return [n for n in stages(root) if any(holds(k, d) for k, d in held.get(n, []))]


def reruns(root: Path, key: str) -> list[str]:
    """The stages a change of params key `key` reruns: those whose params slice holds it (a
    key of it, or a section holding one: `pipeline.deps.slices`) and every stage downstream
    of their outputs (dvc.yaml's graph); the `params` stage, which checks every change,
    left out."""
    return downstream(root, readers(root, key))


def digest_readers(root: Path, file: str) -> list[str]:
    """The stages whose code digest (``data/code/<stage>.txt`` or the one of its `foreach`
    family, as the `params` stage writes them: `pipeline.deps.plan.code_files`) lists the
    project file `file`, in dvc.yaml's order."""
    from pipeline.deps.plan import code_files
    from pipeline.params import load_params

    listed = {name for name, files in code_files(root, load_params(root / "params.yaml")).items()
              if file in files}  # fmt: skip
    # a digest per stage (`train@baseline`) or one a `foreach` family shares (`post`)
    return [n for n in stages(root) if n in listed or n.split("@")[0] in listed]


def downstream(root: Path, names: Sequence[str]) -> list[str]:
    """`names` and every stage downstream of their outputs, in dvc.yaml's order."""
    graph = stages(root)
    ran = list(names)
    changed = True
    while changed:
        outs = {o for n in ran for o in _paths(graph[n].get("outs", []))}
        more = [n for n, s in graph.items() if n not in ran and any(
            _reads(d, o) for d in _paths(s.get("deps", [])) for o in outs)]  # fmt: skip
        ran += more
        changed = bool(more)
    return [n for n in graph if n in ran]  # in dvc.yaml's order


def _every(names: Sequence[str], post: set[str]) -> str:
    keys = {n.split("@", 1)[1] for n in names}
    if keys <= post:
        return " of every `post:` entry"
    return " of every method and `post:` entry" if keys & post else " of every method"


def rerun_text(root: Path, key: str) -> str:
    """`reruns` as prose: single stages by name, a `foreach` family as one `name@` entry."""
    return _prose(root, reruns(root, key))


def _prose(root: Path, names: Sequence[str]) -> str:
    if not names:
        return "none"
    graph = stages(root)
    post = set(_params(root).get("post") or {})
    members = {f: [n for n in graph if n.split("@")[0] == f] for f in {n.split("@")[0] for n in
               graph if "@" in n}}  # fmt: skip
    every = {f for f, ns in members.items() if ns and all(n in names for n in ns)}
    trained = {e for e, p in (_params(root).get("post") or {}).items() if p["base"] != "zero-shot"}
    over = {f for f, ns in members.items() if f not in every and ns and set(ns) & set(names)
            == {n for n in ns if n.split("@", 1)[1] not in post - trained}}  # fmt: skip
    shown = list(dict.fromkeys(n.split("@")[0] + "@" if n.split("@")[0] in every | over else n
                               for n in names))  # fmt: skip
    each = [f"`{n}`" + (_every(members[n[:-1]], post) if n[:-1] in every else OVER)
            if n.endswith("@") else f"`{n}`" for n in shown]  # fmt: skip
    return f"{', '.join(each[:-1])} and {each[-1]}" if len(each) > 1 else "".join(each)


OVER = " of every method and every `post:` entry over a trained one"


ROWS = (
    ("`dataset.name`", "dataset.name"),
    ("the training source's section, `dataset.<dataset.name>`", "dataset.grep_biasir.max_queries"),
    ("the held-out source's section, `dataset.<transfer.name>`", "dataset.genderbias_qa.splits"),
    ("a source's section not in use", "dataset.msmarco_passage.n_triples"),
    ("`score`", "score.tokenizer"),
    ("`candidates.top_k`", "candidates.top_k"),
    ("`candidates.train_top_k`", "candidates.train_top_k"),
    ("`transfer.fold_models`", "transfer.fold_models"),
    ("a key every model family shares (`model.max_len`)", "model.max_len"),
    ("the family in use, `model.<model.arch>`", "model.bi_encoder.temperature"),
    ("a family's section not in use", "model.late_interaction.dim"),
    ("an ordering's section, `orderings.<o>`", "orderings.curriculum.sigma"),
    ("`train.lr` (as every key of `train` not below)", "train.lr"),
    ("`train.threads`", "train.threads"),
    ("`train.log_every` (as `keep_models`, `checkpoint_every`, `device`)", "train.log_every"),
    ("`train.workers` (no output depends on it)", "train.workers"),
    ("`rerank.batch_size`", "rerank.batch_size"),
    ("`evaluate`: `cutoffs`, a metric's section", "evaluate.cutoffs"),
    ("a method's loss terms, `methods.<m>.loss`", "methods.penalty_irrelevant.loss"),
    ("a method's `psi` (as `ordering`, `direction`)", "methods.penalty_irrelevant.psi"),
    ("a `post:` entry's setting, `post.<e>.lambda`", "post.shift_03.lambda"),
    ("`controls`", "controls"),
    ("`report`", "report.primary"),
)
"""The rows of the "Which stages run" table: one setting of each params section and plug-in
kind, a key of the default params.yaml as its example."""
PLUGIN_ROWS = (("losses", "penalty"), ("orderings", "curriculum"), ("models", "bi_encoder"),
               ("sources", "genderbias-qa"), ("metrics", "nfairr"),
               ("posts", "score_shift"))  # fmt: skip
"""One record of each plug-in registry (`pipeline.deps.records.REGISTRIES`) for the table of
what editing its file reruns."""


def plugin_table(root: Path) -> str:
    """What editing one plug-in file of each kind reruns: the stages whose code digest lists
    it, then the count with everything downstream of their outputs and the `params` stage."""
    lines = ["", "| Plug-in file edited (its registry) | Stages whose code digest lists it "
             "| Rerun |", "|---|---|---|"]  # fmt: skip
    for kind, name in PLUGIN_ROWS:
        file = records.record_modules(kind)[name].replace(".", "/") + ".py"
        direct = digest_readers(root, file)
        rerun = len(downstream(root, direct)) + 1
        lines.append(f"| `{file}` ({kind}) | {_prose(root, direct)} | {rerun} |")
    return "\n".join([*lines, ""])


def params_table(root: Path) -> str:
    """The table of what each setting reruns (`ROWS`): the stages whose slice holds it, then
    the count with everything downstream of their outputs."""
    lines = ["", "| Setting (example) | Stages that read it (their slice holds it) | Rerun |",
             "|---|---|---|"]  # fmt: skip
    for label, key in ROWS:
        direct = readers(root, key)
        rerun = len(reruns(root, key)) + 1  # and the `params` stage
        example = "" if label == f"`{key}`" else f" (`{key}`)"
        lines.append(f"| {label}{example} | {_prose(root, direct)} | {rerun} |")
    return "\n".join([*lines, ""])
