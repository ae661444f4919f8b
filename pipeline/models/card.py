"""Model cards (Hugging Face ``README.md`` with YAML front matter) for saved rankers.

``Ranker.save`` writes a card from the model's config; ``python -m pipeline.models.card
METHOD --fold K --out DIR`` exports a trained fold model with a card that also describes how
it was trained (the method's ordering and loss with their settings from params.yaml, the data
set, which fold and how many queries it trained and was tested on, from
``data/queries.parquet``) and reports the method's measured metrics (``metrics/<method>.json``,
labelled with what they cover: every fold model pooled over the test queries) and a "Bias,
risks and limitations" section written from them, next to the ``bm25`` and ``zero-shot`` rows.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pipeline import paths

if TYPE_CHECKING:
    from pipeline.models.family import Family

HEADLINE_CUTOFF = 10
BASE_MODELS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}


def headline() -> list[str]:
    """The card's evaluation columns: the measures whose record says ``headline=True``, at
    cut-off 10 (``pipeline.metrics``)."""
    from pipeline.metrics import MEASURES

    return [m.column(HEADLINE_CUTOFF) for m in MEASURES if m.headline]


def _family(arch: str) -> Family:
    """The family record of ``arch`` (its card facts: library, task tag, how to load it)."""
    from pipeline.models import get_family

    return get_family(arch)


def front_matter(arch: str, base: str, method: str | None) -> dict[str, Any]:
    family = _family(arch)
    return {
        "base_model": BASE_MODELS.get(base, base),
        "library_name": family.library,
        "pipeline_tag": family.pipeline_tag,
        "license": "apache-2.0",
        "datasets": ["Grep-BiasIR"],
        "language": ["en"],
        "tags": ["fairness", "gender-bias", "information-retrieval", "reranking", arch]
        + ([f"method:{method}"] if method else []),
    }


def _fmt(x: object) -> str:
    return f"{x:.4f}" if isinstance(x, float) else str(x)


def card(
    meta: Mapping[str, Any],
    method: str | None = None,
    metrics: Mapping[str, Mapping[str, Any]] | None = None,
    training: Training | None = None,
) -> str:
    """The card's text. ``metrics``: row name (``method``, ``bm25``, ``zero-shot``) → metrics;
    ``training``: how this model was trained (:func:`training_of`)."""
    cfg = meta["config"]
    arch, base = str(meta["arch"]), str(meta.get("base", cfg["name"]))
    head = yaml.safe_dump(front_matter(arch, base, method), sort_keys=False)
    lines = [f"---\n{head}---", f"# {method or 'ranker'} ({arch})", ""]
    lines += [
        f"A `{arch}` ranker fine-tuned from `{base}` by the fair-ranking pipeline"
        + (f" with the bias-mitigation method `{method}`." if method else "."),
        "Load it with " + _family(arch).usage, "", "## Configuration", "", "```json",
        json.dumps(cfg, indent=2), "```", "",
    ]  # fmt: skip
    if training is not None:
        lines += _training_lines(training)
    if metrics and method is not None and method in metrics:
        rows = [r for r in (method, "bm25", "zero-shot") if r in metrics]
        keys = [k for k in headline() if k in metrics[method]]
        n = metrics[method].get("n_queries")
        lines += ["## Evaluation", "", _coverage(training, n), "",
                  "| row | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]  # fmt: skip
        lines += [f"| {r} | " + " | ".join(_fmt(metrics[r].get(k, "")) for k in keys) + " |"
                  for r in rows]  # fmt: skip
        lines += ["", "## Bias, risks and limitations", "", *_risks(metrics[method], n), ""]
    else:
        lines += ["## Bias, risks and limitations", "",
                  "Not yet measured: export with `python -m pipeline.models.card` after "
                  "`dvc repro` to add the measured numbers.", ""]  # fmt: skip
    return "\n".join(lines)


def _risks(m: Mapping[str, Any], n_queries: object = None) -> list[str]:
    out = []
    arab = m.get("ARaB-tf@10")
    if isinstance(arab, float):
        side = "male" if arab > 0 else "female"
        out.append(f"- Signed ARaB-tf@10 is {arab:+.4f}: its top 10 lean {side} on average.")
    gap, wins = m.get("gap-mean"), m.get("gap-male-wins")
    if isinstance(gap, float) and isinstance(wins, float):
        out.append(
            f"- Counterfactual gap: the male version of a relevant document ranks {gap:+.2f} "
            f"places above the female version on average; the male version wins on "
            f"{100 * wins:.0f}% of the queries."
        )
    n = f"{n_queries} queries" if n_queries is not None else "few queries"
    out.append(f"- These numbers come from {n} with binary gender labels: they show the "
               "method's direction on real text, not its effect at MS MARCO scale, and say "
               "nothing about non-binary gender.")  # fmt: skip
    return out


@dataclass(frozen=True)
class Training:
    """How one exported model was trained: its method entry and ordering section (params.yaml),
    the data set, its fold and the queries it trained and was tested on."""

    method: Mapping[str, Any]
    ordering: Mapping[str, Any]
    dataset: Mapping[str, Any]
    train: Mapping[str, Any]
    fold: int
    folds: int
    train_queries: int | None
    test_queries: int | None


def training_of(method: str, fold: int, root: Path = Path(".")) -> Training:
    """:class:`Training` of ``models/<method>/fold-<fold>`` from ``params.yaml`` (loaded into
    its typed configs) and ``data/queries.parquet`` (query counts left out when the data are
    not there)."""
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
        assigned = root / paths.FOLDS  # several fold assignments: fold ids beyond k
        if folds > 1 and assigned.is_file():
            q = pl.read_parquet(assigned)
            q = q.filter(pl.col("assignment") == fold // folds)
        if folds > 1:
            n_test = q.filter(pl.col("fold") == fold).height
            n_train = q.height - n_test
        else:
            n_test = q.filter(pl.col("split") == "test").height
            n_train = q.height - n_test
    train = {k: getattr(params.train, k) for k in ("seed", "seeds", "epochs", "lr", "batch_size",
                                                   "group_size", "max_steps")}  # fmt: skip
    return Training(
        entry.settings(),
        dataclasses.asdict(ordering) if ordering is not None else {},
        dataset, train, fold, folds, n_train, n_test,
    )  # fmt: skip


def _training_lines(t: Training) -> list[str]:
    m = dict(t.method)
    loss = {k: v for k, v in m.items() if k not in ("ordering", "direction", "loss")}
    loss = {"loss": " + ".join(map(_term, m.get("loss", []))), **loss}
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
            f"- Training: `{_inline(t.train)}`",
            f"- Data: `{t.dataset.get('name')}` (`dataset.{t.dataset.get('section')}."
            f"max_queries: {t.dataset.get('max_queries')}`), {split}: this model {counts}.",
            ""]  # fmt: skip


def _term(term: str | Mapping[str, Any]) -> str:
    """A loss term as the card writes it: ``penalty (docs: relevant, lambda: 0.25)``."""
    if isinstance(term, str):
        return term
    settings = {k: v for k, v in term.items() if k != "name"}
    return f"{term['name']} ({_inline(settings)})" if settings else str(term["name"])


def _inline(d: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items())


def _coverage(t: Training | None, n: object) -> str:
    """What the metrics cover: every fold model of the method, pooled over the test queries."""
    if t is not None and t.folds > 1:
        return (f"The method's metrics (`metrics/<method>.json`) pool all {t.folds} fold models "
                f"over {n} queries, each query ranked by the fold model that never saw it; this "
                f"model (fold {t.fold}) ranked {t.test_queries} of them. With `train.seeds`, "
                "they are means over the seeds.")  # fmt: skip
    return f"The method's metrics (`metrics/<method>.json`) over {n} test queries."


def model_dir(method: str, fold: int, root: Path = Path("."), seed: int | None = None) -> Path:
    """``models/<method>/[seed-<n>/]fold-<fold>``: seed ``seed``'s model, or (``None``) the
    first kept seed's of ``train.seeds`` (``train.keep_models``), or the unseeded folder."""
    if seed is not None:
        return root / paths.model(method, f"seed-{seed}", fold)
    from pipeline.params import load_params

    sub = load_params(root / "params.yaml").train.kept_runs()[0][1]
    return root / paths.model(method, sub, fold)


def export(
    method: str, fold: int, out: Path, root: Path = Path("."), seed: int | None = None
) -> Path:
    """Copy the model of ``method``'s fold ``fold`` (``model_dir``) to ``out`` with a card
    that has the metrics."""
    src = model_dir(method, fold, root, seed)
    if not src.is_dir():
        raise FileNotFoundError(f"{src}: no trained model; run `dvc repro train@{method}`")
    # copyfile: DVC's cache links are read-only, the export must not be
    shutil.copytree(src, out, dirs_exist_ok=True, copy_function=shutil.copyfile)
    meta = json.loads((src / "ranker.json").read_text())
    files = {r: root / paths.metrics(r) for r in (method, "bm25", "zero-shot")}
    metrics = {r: json.loads(f.read_text()) for r, f in files.items() if f.is_file()}
    readme = out / "README.md"
    readme.unlink(missing_ok=True)  # a read-only copy of a file DVC linked from its cache
    readme.write_text(card(meta, method, metrics, training_of(method, fold, root)))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("method")
    parser.add_argument("--fold", type=int, default=0)
    parser.add_argument("--seed", type=int, default=None,
                        help="a seed of train.seeds (default: the first, whose models are kept)")
    parser.add_argument("--out", required=True, type=Path)
    ns = parser.parse_args(argv)
    print(export(ns.method, ns.fold, ns.out, seed=ns.seed))


if __name__ == "__main__":
    main()
