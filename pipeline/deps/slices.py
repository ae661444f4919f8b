"""The params deps of every stage: the keys it reads, written per stage as a slice (issue 42).

DVC cannot give each item of a ``foreach`` stage its own ``params:`` list, and a whole
section as a dep reruns a stage for keys it never reads (``train.workers`` retrained the
default; a setting of a model family or a data source not in use reran everything after it).
So no stage but ``params`` lists ``params:``: the ``params`` stage writes
``data/params/<stage>.yaml`` per DVC stage (``train@baseline.yaml``), the keys ``KEYS`` names
for it with their values in params.yaml, flat and sorted (a key params.yaml leaves out is
``null``: its default), and only when its bytes change; each stage depends on its slice. A
change to a key no stage reads reruns ``params`` alone (seconds).

``KEYS`` holds templates per stage: ``{key}`` is the stage's item (a method, a ``post:``
entry, an evaluated row), ``{ordering}`` the method's ordering, ``{base}`` the ``post:``
entry's base, ``{source}`` / ``{transfer}`` the sections of ``dataset.name`` /
``transfer.name`` (``dataset.grep_biasir``), ``{family}`` ``model.arch``, ``{method_key}``
each per-method key the method's ordering declares (its record's ``method_keys``:
``direction``). A key is a leaf or a section (its leaves); ``section!a,b`` is the section
without keys ``a`` and ``b``.
``EXEMPT`` keys change how a stage runs, never its outputs, and are in no slice.

The run-time witness (`pipeline.witness`) checks the table: on the tiny profile every key
a stage reads is in its slice, and every key of its slice is read (tests/stages/
test_witness.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from pipeline import io, plugins
from pipeline.params import FIRST_STAGE, ZERO_SHOT

FOLDER = Path("data/params")
EXEMPT = frozenset({"train.workers"})
"""Read, yet no dep: fold models trained in parallel worker processes or one after another
are byte-identical (checked on the tiny profile; ``train.threads`` is not: the CPU's
reduction order changes the trained weights, so it stays a dep; so do ``train.log_every``,
whose cadence is in the DVCLive curves train@ writes, and ``keep_models``,
``checkpoint_every``, ``device``, not checked)."""
MODEL = ("model.arch", "model.name", "model.n_layers", "model.train_layers", "model.max_len",
         "model.q_len")  # fmt: skip
RANKER = (*MODEL, "model.{family}", "candidates.b", "candidates.k1", "candidates.top_k",
          "dataset.name", "rerank.batch_size", "transfer.fold_models", "train.seed",
          "train.seeds", "train.device", "train.threads")  # fmt: skip
PROFILE = ("dataset.name", "dataset.{source}", "dataset.{transfer}", "score", "candidates",
           "transfer", "evaluate", "train.seed", "train.seeds", "report.primary")  # fmt: skip
"""What every evaluate stage reads: the `profile` digests (pipeline/profile.py) of the
sections in use, the seeds of its runs, and the primary metric its headline metrics file
(`metrics/<row>.json`, pipeline/metrics/runner.py `headline`) holds."""
TRAINED = (*MODEL, "model.{family}",
           "train!threads,workers,device,checkpoint_every,log_every,keep_models")  # fmt: skip
RUN_OF = ("post.{base}", "methods.{base}", *MODEL[:2], "model.n_layers", "model.max_len",
          "model.q_len", "candidates.b", "candidates.k1", "candidates.top_k", "dataset.name",
          "train.device", "train.seed", "train.seeds")  # fmt: skip
"""What the post stage reads of its base's runs: the base's entry (its provenance)."""
SCORE = ("score.liwc_dic", "score.neutrality_tau", "score.tokenizer",
         "score.wordlist_representative", "score.wordlist_specific")  # fmt: skip
KEYS: dict[str, tuple[str, ...]] = {
    "extract": ("dataset.name", "dataset.{source}"),
    "score": ("score",),
    "candidates": ("candidates",),
    "transfer_data": ("transfer.name", "dataset.{transfer}", *SCORE, "candidates.b",
                      "candidates.fill_seed", "candidates.k1", "candidates.top_k"),
    "features": (*MODEL, "train.seed", "train.threads"),
    "order": ("methods.{key}.ordering", "methods.{key}.psi", "methods.{key}.{method_key}",
              "methods.{key}.ordering_params", "orderings.{ordering}", "train.group_size",
              "train.seed", "train.seeds"),
    "train": ("methods.{key}", *RANKER, "train!workers", "orderings.{ordering}",
              "dataset.{source}.folds", "dataset.{source}.max_queries"),
    "rerank_zero_shot": (*RANKER, "methods.zero-shot", "post.zero-shot"),
    "post": ("post.{key}", *RUN_OF),
    "evaluate@method": (*PROFILE, *TRAINED, "post.{key}"),
    "evaluate@post": (*PROFILE, *TRAINED, "post.{key}.base", "post.{base}"),
    "evaluate@post0": (*PROFILE, *MODEL, "model.{family}", "post.{key}.base", "post.{base}",
                       "methods.{base}"),
    "evaluate_first_stage": (*PROFILE, "methods.bm25", "post.bm25"),
    "evaluate_zero_shot": (*PROFILE, *MODEL, "model.{family}", "methods.zero-shot",
                           "post.zero-shot"),
    "audit": (),
    "curriculum_figure": ("orderings.curriculum", "train.seed"),
    "report": ("controls", "methods", "post", "report", "evaluate.cutoffs", "dataset.name",
               "dataset.{source}.folds", "model.arch", "model.name", "train.seeds"),
}  # fmt: skip
"""The keys each stage reads (templates, see the module doc); ``evaluate@method`` /
``@post`` / ``@post0`` are the rows of a trained method / a `post:` entry / one over
``zero-shot``."""
assert FIRST_STAGE == "bm25" and ZERO_SHOT == "zero-shot"


def _section(kind: str, name: str) -> str:
    record = plugins.record(kind, name)
    return str(getattr(record, "section", name))


def stage_items(raw: Mapping[str, Any]) -> Iterator[tuple[str, str, dict[str, str]]]:
    """``(stage name, KEYS entry, its item's fields)`` for every DVC stage of the params."""
    methods, post = raw.get("methods") or {}, raw.get("post") or {}
    for name in KEYS:
        if name in ("order", "train"):
            for m, entry in methods.items():
                yield f"{name}@{m}", name, {"key": m, "ordering": str(entry["ordering"])}
        elif name == "post":
            for e, entry in post.items():
                yield f"post@{e}", name, {"key": e, "base": str(entry["base"])}
        elif name == "evaluate@method":
            yield from ((f"evaluate@{m}", name, {"key": m}) for m in methods)
        elif name.startswith("evaluate@post"):
            for e, entry in post.items():
                over_zero_shot = str(entry["base"]) == ZERO_SHOT
                if over_zero_shot == name.endswith("0"):
                    yield f"evaluate@{e}", name, {"key": e, "base": str(entry["base"])}
        else:
            yield name, name, {}


def _get(raw: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    node: Any = raw
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _flat(prefix: str, value: Any, drop: frozenset[str]) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            if str(k) not in drop:
                yield from _flat(f"{prefix}.{k}", v, frozenset())
    else:
        yield prefix, value


def keys(template: str, raw: Mapping[str, Any], item: Mapping[str, str]) -> tuple[str, set[str]]:
    """One ``KEYS`` template resolved for ``item`` and the params: the key and its drops."""
    dataset, model = raw.get("dataset") or {}, raw.get("model") or {}
    transfer = raw.get("transfer") or {}
    fields = {
        **item,
        "source": _section("source", str(dataset.get("name", "grep-biasir"))),
        "transfer": _section("source", str(transfer.get("name", "genderbias-qa"))),
        "family": str(model.get("arch", "bi_encoder")),
    }
    key, _, drop = template.format(**fields).partition("!")
    return key, {d for d in drop.split(",") if d}


def expand(templates: tuple[str, ...], item: Mapping[str, str]) -> Iterator[str]:
    """``templates`` with ``{method_key}`` replaced by each of the ordering's method keys."""
    for template in templates:
        if "{method_key}" not in template:
            yield template
            continue
        record = plugins.record("ordering", item["ordering"])
        for k in getattr(record, "method_keys", ()):
            yield template.replace("{method_key}", k)


def slice_of(
    raw: Mapping[str, Any], templates: tuple[str, ...], item: Mapping[str, str]
) -> dict[str, Any]:
    """``{dotted leaf: value}`` of the keys ``templates`` name (``EXEMPT`` left out)."""
    out: dict[str, Any] = {}
    for template in expand(templates, item):
        key, drop = keys(template, raw, item)
        _, value = _get(raw, key)
        for leaf, v in _flat(key, value, frozenset(drop)):
            if leaf not in EXEMPT:
                out[leaf] = v
    return dict(sorted(out.items()))


def held(raw: Mapping[str, Any]) -> dict[str, list[tuple[str, set[str]]]]:
    """``{stage: [(key, its dropped keys)]}``: the keys each stage's slice holds, resolved
    (a section's keys params.yaml leaves out included: adding one changes the slice)."""
    return {stage: [keys(t, raw, item) for t in expand(KEYS[entry], item)]
            for stage, entry, item in stage_items(raw)}  # fmt: skip


def slices(raw: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{stage: its slice}`` for every DVC stage of the params (``raw``: params.yaml)."""
    return {stage: slice_of(raw, KEYS[entry], item) for stage, entry, item in stage_items(raw)}


def text(values: Mapping[str, Any]) -> str:
    """A slice as its file holds it: flat, sorted YAML."""
    return yaml.safe_dump(dict(values), sort_keys=True) if values else "{}\n"


def read(path: Path) -> dict[str, Any]:
    """params.yaml as a plain tree (the values the slices hold)."""
    tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return dict(tree)


def sync(folder: Path, wanted: Mapping[str, str]) -> int:
    """``folder`` holding exactly ``wanted`` (file name → text): a file whose text is
    unchanged is not touched, one not wanted is removed; how many changed. The params
    slices' and the code digests' writer (`write`, `pipeline.deps.digest.write`)."""
    folder.mkdir(parents=True, exist_ok=True)
    changed = 0
    for name, body in wanted.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != body:
            io.write_text(body, path)
            changed += 1
    for stale in (p for p in folder.iterdir() if p.name not in wanted):
        stale.unlink()
        changed += 1
    return changed


def write(root: Path, raw: Mapping[str, Any]) -> int:
    """Write ``data/params/<stage>.yaml`` for every stage (`sync`); how many changed."""
    return sync(root / FOLDER, {f"{stage}.yaml": text(v) for stage, v in slices(raw).items()})


def dep(stage: str) -> str:
    """The slice a DVC stage depends on (``train`` → ``data/params/train@${key}.yaml``)."""
    return f"{FOLDER.as_posix()}/{stage}.yaml"
