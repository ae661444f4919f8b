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
import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pipeline.models._card_training import (
    CardError,
    Row,
    Training,
    count,
    evaluation_rows,
    training_lines,
    training_of,
)

if TYPE_CHECKING:
    from pipeline.models.family import Family
    from pipeline.params import Params

HEADLINE_CUTOFF = 10


def headline() -> list[str]:
    """The card's evaluation columns: the measures whose record says ``headline=True``, at
    cut-off 10 (``pipeline.metrics``)."""
    from pipeline.metrics import MEASURES

    return [m.column(HEADLINE_CUTOFF) for m in MEASURES if m.headline]


BASE_MODELS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}
DATASETS = {"grep-biasir": "Grep-BiasIR", "msmarco-passage": "MS MARCO passage",
            "trec-fair-2022": "TREC Fair 2022"}  # fmt: skip


def _family(arch: str) -> Family:
    """The family record of ``arch`` (its card facts: library, task tag, how to load it)."""
    from pipeline.models import get_family

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


def shown_config(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The `model` settings this model was built with: the keys every family shares and its
    family's own (``model.<arch>``; a bi-encoder's card shows no late interaction ``dim``)."""
    return {**meta["config"], **meta.get("settings", {})}


def _fmt(x: object) -> str:
    return f"{x:.4f}" if isinstance(x, float) else str(x)


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
    cfg = shown_config(meta)
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
    lines += ["```json", json.dumps(cfg, indent=2), "```", ""]
    if training is not None:
        lines += training_lines(training)
    if rows and training is not None:
        keys = [k for k in headline() if k in rows[0].values]
        lines += ["## Evaluation", "", *_coverage(training, rows), "",
                  "| row | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]  # fmt: skip
        lines += [f"| {r.label} | " + " | ".join(_fmt(r.values.get(k, "")) for k in keys) + " |"
                  for r in rows]  # fmt: skip
        lines += ["", *notes, "", "## Bias, risks and limitations", "",
                  *_risks(rows[0].values), ""]  # fmt: skip
    else:
        measured = ""
        if method and training is not None:
            sub = f"{training.sub}/" if training.sub else ""
            measured = (f"`evaluate@{method}` measures it after training "
                        f"(`eval/{method}/{sub}metrics.json`); ")  # fmt: skip
        lines += ["## Bias, risks and limitations", "",
                  f"Not measured when the model was saved: {measured}export with "
                  "`python -m pipeline.models.card` after `dvc repro` to add the measured "
                  "numbers.", ""]  # fmt: skip
    return "\n".join(lines)


def write_training_card(folder: Path, method: str, fold: int, seed: int,
                        root: Path = Path("."), params: Params | None = None) -> None:  # fmt: skip
    """The card a trained fold model is saved with (``train@<method>``): its method, seed,
    fold and training settings; the measured numbers come later (`evaluate@`, `export`).
    A model of a seed that is not kept (``train.keep_models: first``) keeps the plain card."""
    meta = json.loads((folder / "ranker.json").read_text())
    try:
        t = training_of(method, fold, root, seed, params)
    except CardError:
        return
    (folder / "README.md").write_text(card(meta, method, (), t, folder))


def model_index(method: str | None, t: Training | None, row: Row) -> list[dict[str, Any]]:
    """Hugging Face's ``model-index``: this model's seed's measured results."""
    if t is None:
        return []
    split = (f"test folds of {t.folds}-fold cross-validation ({count(row.values.get('n_queries'))}"
             " queries)" if t.folds > 1 else "test")  # fmt: skip
    metrics = [{"type": k.lower().replace("@", "_at_").replace("-", "_"), "name": k,
                "value": round(float(v), 4)}
               for k in headline() if isinstance(v := row.values.get(k), float | int)]  # fmt: skip
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


def _coverage(t: Training, rows: Sequence[Row]) -> list[str]:
    """What each row covers and which files it was read from."""
    return [f"- `{r.label}` ({r.source}): {r.covers}." for r in rows]


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
