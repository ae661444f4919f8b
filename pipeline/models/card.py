"""Model cards (Hugging Face ``README.md`` with YAML front matter) for saved rankers.

``Ranker.save`` writes a card from the model's config; ``python -m pipeline.models.card
METHOD --fold K [--seed N] --out DIR`` exports a trained fold model with a card that also
says which model it is (method, seed, fold), how it was trained (the method's ordering and
loss with their settings from params.yaml, the data set, which fold and how many queries it
trained and was tested on, from ``data/queries.parquet``) and what was measured: this
model's seed (``eval/<method>/seed-<n>/metrics.json``: its fold models pooled over every
test query), the mean over seeds (``metrics/<method>.json``), the ``bm25`` and ``zero-shot``
reference rows when they come from the same profile (``profile.data`` of the metrics files,
pipeline/profile.py), a Hugging Face ``model-index`` and a "Bias, risks and limitations"
section written from them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pipeline import paths

if TYPE_CHECKING:
    from pipeline.models.base import Family

HEADLINE = ("MRR@10", "nDCG@10", "ARaB-tf-abs@10", "NFaiRR@10", "LIWC@10", "gap-mean", "gap-abs")
BASE_MODELS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}
DATASETS = {"grep-biasir": "Grep-BiasIR", "msmarco-passage": "MS MARCO passage",
            "trec-fair-2022": "TREC Fair 2022"}  # fmt: skip
USED_BY = {"similarity": ("bi_encoder",), "temperature": ("bi_encoder", "late_interaction"),
           "dim": ("late_interaction",)}  # fmt: skip
"""`model` keys that only some families read (``ModelConfig``'s docstring): the card leaves
them out for the others, so a bi-encoder's card does not show late interaction's ``dim``."""


class CardError(ValueError):
    """A model that cannot be exported as asked (e.g. a seed whose models were not kept)."""


def _family(arch: str) -> Family:
    """The family record of ``arch`` (its card facts: library, task tag, how to load it)."""
    from pipeline.models.registry import get_family  # the registry imports this module

    return get_family(arch)


def front_matter(
    arch: str, base: str, method: str | None, index: list[dict[str, Any]] | None = None,
    dataset: str = "grep-biasir",
) -> dict[str, Any]:  # fmt: skip
    """Hugging Face card metadata; ``index``: its ``model-index`` (measured results)."""
    family = _family(arch)
    out: dict[str, Any] = {
        "base_model": BASE_MODELS.get(base, base),
        "library_name": family.library,
        "pipeline_tag": family.pipeline_tag,
        "license": "apache-2.0",
        "datasets": [DATASETS.get(dataset, dataset)],
        "language": ["en"],
        "tags": ["fairness", "gender-bias", "information-retrieval", "reranking", arch]
        + ([f"method:{method}"] if method else []),
    }
    if index:
        out["model-index"] = index
    return out


def dimensions(arch: str, cfg: Mapping[str, Any], folder: Path | None) -> str | None:
    """What the model outputs, with the sizes read from its files: a bi-encoder's embedding
    size is its encoder's ``hidden_size`` (384 for MiniLM), not ``model.dim``."""
    if arch == "cross_encoder":
        return "one relevance score per (query, document) pair"
    config = folder / "config.json" if folder is not None else None
    if config is None or not config.is_file():
        return None
    hidden = json.loads(config.read_text()).get("hidden_size")
    if arch == "late_interaction":
        return f"one {cfg.get('dim')}-dimensional vector per token (projected from {hidden})"
    return f"one {hidden}-dimensional embedding per text"


def shown_config(arch: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The `model` settings this family reads (``USED_BY``)."""
    return {k: v for k, v in cfg.items() if arch in USED_BY.get(k, (arch,))}


@dataclass(frozen=True)
class Row:
    """One row of the card's evaluation table: its label, the file it was read from and
    what it covers."""

    label: str
    source: str
    covers: str
    values: Mapping[str, Any]


def _fmt(x: object) -> str:
    return f"{x:.4f}" if isinstance(x, float) else str(x)


def count(x: object) -> str:
    """A count as people write it: ``117``, not the ``117.0`` a mean over seeds gives."""
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def card(
    meta: Mapping[str, Any],
    method: str | None = None,
    rows: Sequence[Row] = (),
    training: Training | None = None,
    folder: Path | None = None,
    notes: Sequence[str] = (),
) -> str:
    """The card's text. ``rows``: the evaluation table (the first is this model's);
    ``training``: how this model was trained (:func:`training_of`); ``folder``: the saved
    model (its sizes); ``notes``: lines on rows left out."""
    cfg = meta["config"]
    arch, base = str(meta["arch"]), str(meta.get("base", cfg["name"]))
    dataset = str(training.dataset.get("name")) if training else "grep-biasir"
    index = model_index(method, training, rows[0]) if rows and training else None
    head = yaml.safe_dump(front_matter(arch, base, method, index, dataset), sort_keys=False)
    lines = [f"---\n{head}---", f"# {method or 'ranker'} ({arch})", ""]
    lines += [
        f"A `{arch}` ranker fine-tuned from `{base}` by the fair-ranking pipeline"
        + (f" with the bias-mitigation method `{method}`." if method else "."),
        *([_identity(training)] if training else []),
        "Load it with " + _family(arch).usage, "", "## Configuration", "",
    ]  # fmt: skip
    dims = dimensions(arch, cfg, folder)
    lines += [f"Output: {dims}.", ""] if dims else []
    lines += ["```json", json.dumps(shown_config(arch, cfg), indent=2), "```", ""]
    if training is not None:
        lines += _training_lines(training)
    if rows and training is not None:
        keys = [k for k in HEADLINE if k in rows[0].values]
        lines += ["## Evaluation", "", *_coverage(training, rows), "",
                  "| row | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]  # fmt: skip
        lines += [f"| {r.label} | " + " | ".join(_fmt(r.values.get(k, "")) for k in keys) + " |"
                  for r in rows]  # fmt: skip
        lines += ["", *notes, "", "## Bias, risks and limitations", "",
                  *_risks(rows[0].values), ""]  # fmt: skip
    else:
        lines += ["## Bias, risks and limitations", "",
                  "Not yet measured: export with `python -m pipeline.models.card` after "
                  "`dvc repro` to add the measured numbers.", ""]  # fmt: skip
    return "\n".join(lines)


def model_index(method: str | None, t: Training | None, row: Row) -> list[dict[str, Any]]:
    """Hugging Face's ``model-index``: this model's seed's measured results."""
    if t is None:
        return []
    split = (f"test folds of {t.folds}-fold cross-validation ({count(row.values.get('n_queries'))}"
             " queries)" if t.folds > 1 else "test")  # fmt: skip
    metrics = [{"type": k.lower().replace("@", "_at_").replace("-", "_"), "name": k,
                "value": round(float(v), 4)}
               for k in HEADLINE if isinstance(v := row.values.get(k), float | int)]  # fmt: skip
    name = str(t.dataset.get("name"))
    return [{
        "name": f"{method}-seed-{t.seed}-fold-{t.fold}",
        "results": [{
            "task": {"type": "text-ranking", "name": "Reranking"},
            "dataset": {"name": DATASETS.get(name, name), "type": name, "split": split},
            "metrics": metrics,
            "source": {"name": f"fair-ranking pipeline, {row.source}"},
        }],
    }]  # fmt: skip


def _identity(t: Training) -> str:
    kept = "only the first seed's models are kept, `train.keep_models: first`"
    seeds = (f" of `train.seeds` {t.train['seeds']} ({kept if t.keep == 'first' else 'all kept'})"
             if t.train.get("seeds") else " (`train.seed`)")  # fmt: skip
    return f"This model: seed {t.seed}{seeds}, fold {t.fold} of {t.folds} (`{t.path}`)."


def _risks(m: Mapping[str, Any]) -> list[str]:
    out = []
    arab = m.get("ARaB-tf@10")
    if isinstance(arab, float):
        side = "male" if arab > 0 else "female"
        out.append(f"- Signed ARaB-tf@10 is {arab:+.4f}: its top 10 lean {side} on average.")
    gap, wins = m.get("gap-mean"), m.get("gap-male-wins")
    if isinstance(gap, float) and isinstance(wins, float):
        where = ("at the same place as" if round(abs(gap), 2) == 0
                 else f"{abs(gap):.2f} places {'above' if gap > 0 else 'below'}")  # fmt: skip
        out.append(
            f"- Counterfactual gap: the male version of a relevant document ranks {where} "
            f"the female version on average; the male version wins on {100 * wins:.0f}% of "
            "the queries."
        )
    n = m.get("n_queries")
    few = f"{count(n)} queries" if n is not None else "few queries"
    out.append(f"- These numbers come from {few} with binary gender labels: they show the "
               "method's direction on real text, not its effect at MS MARCO scale, and say "
               "nothing about non-binary gender.")  # fmt: skip
    return out


@dataclass(frozen=True)
class Training:
    """How one exported model was trained: its method entry and ordering section (params.yaml),
    the data set, its seed, fold and the queries it trained and was tested on."""

    method: Mapping[str, Any]
    ordering: Mapping[str, Any]
    dataset: Mapping[str, Any]
    train: Mapping[str, Any]
    fold: int
    folds: int
    train_queries: int | None
    test_queries: int | None
    seed: int = 0
    path: str = ""
    keep: str = "first"
    sub: str = ""  # the seed folder (`seed-<n>`; empty with `train.seeds: null`)


def training_of(
    method: str, fold: int, root: Path = Path("."), seed: int | None = None
) -> Training:
    """:class:`Training` of ``method``'s fold ``fold`` model of ``seed`` (default: the first
    kept) from ``params.yaml`` (loaded into its typed configs) and ``data/queries.parquet``
    (query counts left out when the data are not there)."""
    from pipeline.data import get_source  # params imports the model families' config
    from pipeline.params import load_params

    params = load_params(root / "params.yaml")
    entry = params.methods[method]
    ordering = params.orderings.get(entry.ordering)
    source = params.dataset.source
    dataset = {"name": params.dataset.name, "section": get_source(params.dataset.name).section,
               **dataclasses.asdict(source)}  # fmt: skip
    folds = params.dataset.folds
    n_train = n_test = None
    queries = root / paths.DATA / "queries.parquet"
    if queries.is_file():
        import polars as pl

        q = pl.read_parquet(queries, columns=["query_id", "fold"] if folds > 1 else ["split"])
        if folds > 1:
            n_test = q.filter(pl.col("fold") == fold).height
        else:
            n_test = q.filter(pl.col("split") == "test").height
        n_train = q.height - n_test
    this, sub = chosen_run(method, params.train, seed)
    keys = ("seeds", "epochs", "lr", "batch_size", "group_size", "max_steps")
    train = {k: getattr(params.train, k) for k in keys}
    return Training(
        entry.settings(),
        dataclasses.asdict(ordering) if ordering is not None else {},
        dataset, train, fold, folds, n_train, n_test, this,
        paths.model(method, sub, fold).as_posix(), params.train.keep_models, sub,
    )  # fmt: skip


def chosen_run(method: str, train: Any, seed: int | None) -> tuple[int, str]:
    """``(seed, seed folder)`` of the model to export: ``seed``'s, or the first kept one.
    A seed of ``train.seeds`` whose models were not kept, or one that was never trained,
    raises :class:`CardError` with the fix."""
    runs, kept = train.seed_runs(), train.kept_runs()
    if seed is None:
        return kept[0]
    match = [r for r in runs if r[0] == seed]
    if not match:
        raise CardError(f"--seed {seed}: `{method}` was trained with the seeds "
                        f"{[s for s, _ in runs]} (train.seeds); pass one of them")  # fmt: skip
    if match[0] not in kept:
        first = kept[0][0]
        raise CardError(
            f"--seed {seed}: models/{method}/seed-{seed}/ was not kept: only the first seed's "
            f"models are kept (`train.keep_models: first`; seed {seed}'s runs and metrics "
            f"are). Export seed {first} (`--seed {first}`, the default), or keep every seed's "
            f"models with `dvc exp run -S train.keep_models=all train@{method}` (retrains it)."
        )
    return match[0]


def _training_lines(t: Training) -> list[str]:
    m = dict(t.method)
    loss = {k: v for k, v in m.items() if k not in ("ordering", "direction")}
    order = {"ordering": m.get("ordering"), **({"direction": m["direction"]} if "direction" in m
                                              else {}), **t.ordering}  # fmt: skip
    counts = (f"trained on {t.train_queries} queries, tested on {t.test_queries}"
              if t.train_queries is not None else "query counts: data/queries.parquet missing")
    split = (f"fold {t.fold} of {t.folds} (k-fold cross-validation over queries)"
             if t.folds > 1 else "one train/test split")  # fmt: skip
    return ["## Training", "",
            f"- Method: `{_inline(m)}`",
            f"- Ordering: `{_inline(order)}`",
            f"- Loss: `{_inline(loss)}`",
            f"- Training: `{_inline({'seed': t.seed, **t.train})}`",
            f"- Data: `{t.dataset.get('name')}` (`dataset.{t.dataset.get('section')}."
            f"max_queries: {t.dataset.get('max_queries')}`), {split}: this model {counts}.",
            ""]  # fmt: skip


def _inline(d: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items())


def _coverage(t: Training, rows: Sequence[Row]) -> list[str]:
    """What each row covers and which files it was read from."""
    return [f"- `{r.label}` ({r.source}): {r.covers}." for r in rows]


def evaluation_rows(
    method: str, t: Training, root: Path = Path(".")
) -> tuple[list[Row], list[str]]:
    """The card's rows: this model's seed, the mean over seeds, and the reference rows of
    the same profile; and a note per reference row left out (another profile)."""
    sub = t.sub
    seed_file = paths.evals(method, sub) / "metrics.json" if sub else paths.metrics(method)
    mean_file = paths.metrics(method)
    rows: list[Row] = []
    if (root / seed_file).is_file():
        values = json.loads((root / seed_file).read_text())
        n = count(values.get("n_queries"))
        folds = f"all {t.folds} fold models" if t.folds > 1 else "the model"
        ranked = f"; this model ranked {t.test_queries} of them" if t.folds > 1 else ""
        rows.append(Row(f"{method}, seed {t.seed}", seed_file.as_posix(),
                        f"{folds} of seed {t.seed} pooled over {n} test queries, each ranked "
                        f"by the fold model that never saw it{ranked}", values))  # fmt: skip
    if sub and (root / mean_file).is_file():
        values = json.loads((root / mean_file).read_text())
        seeds = values.get("seeds", t.train.get("seeds"))
        rows.append(Row(f"{method}, mean of {len(seeds or [])} seeds", mean_file.as_posix(),
                        f"the mean over the seeds {seeds} of each seed's pooled value",
                        values))  # fmt: skip
    notes = []
    mine = rows[0].values if rows else {}
    for ref, what in (("bm25", "the BM25 candidates"), ("zero-shot", "the untrained model")):
        f = root / paths.metrics(ref)
        if not f.is_file() or not rows:
            continue
        values = json.loads(f.read_text())
        if same_profile(mine, values):
            rows.append(Row(ref, paths.metrics(ref).as_posix(), what, values))
        else:
            notes.append(f"`{ref}` is left out: `{paths.metrics(ref).as_posix()}` comes from "
                         f"another profile ({_profile_text(values)}, this model's: "
                         f"{_profile_text(mine)}); `dvc repro` updates it.")  # fmt: skip
    return rows, notes


def same_profile(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two metrics files come from the same data: their ``profile.data`` digests
    (pipeline/profile.py), or, in files written before it, their query counts."""
    pa, pb = a.get("profile", {}), b.get("profile", {})
    if isinstance(pa, Mapping) and isinstance(pb, Mapping) and pa.get("data") and pb.get("data"):
        return bool(pa["data"] == pb["data"])
    return bool(a.get("n_queries") == b.get("n_queries"))


def _profile_text(m: Mapping[str, Any]) -> str:
    p = m.get("profile")
    data = f"profile.data {p['data']}, " if isinstance(p, Mapping) and p.get("data") else ""
    return f"{data}{count(m.get('n_queries'))} queries"


def export(
    method: str, fold: int, out: Path, root: Path = Path("."), seed: int | None = None
) -> Path:
    """Copy ``method``'s fold ``fold`` model of ``seed`` (default: the first kept) to
    ``out`` with a card that has the metrics."""
    t = training_of(method, fold, root, seed)
    src = root / t.path
    if not src.is_dir():
        raise CardError(f"{src}: no trained model; run `dvc repro train@{method}`")
    # copyfile: DVC's cache links are read-only, the export must not be
    shutil.copytree(src, out, dirs_exist_ok=True, copy_function=shutil.copyfile)
    meta = json.loads((src / "ranker.json").read_text())
    rows, notes = evaluation_rows(method, t, root)
    readme = out / "README.md"
    readme.unlink(missing_ok=True)  # a read-only copy of a file DVC linked from its cache
    readme.write_text(card(meta, method, rows, t, src, notes))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("method")
    parser.add_argument("--fold", type=int, default=0)
    parser.add_argument("--seed", type=int, default=None,
                        help="a seed of train.seeds (default: the first, whose models are kept)")
    parser.add_argument("--out", required=True, type=Path)
    ns = parser.parse_args(argv)
    try:
        sys.stdout.write(f"{export(ns.method, ns.fold, ns.out, seed=ns.seed)}\n")
    except CardError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
