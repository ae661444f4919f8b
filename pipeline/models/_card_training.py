"""What a model card says about its model's training and measurements (pipeline/models/
card.py): which seed's and fold's model it is, how it was trained (params.yaml,
data/queries.parquet) and the rows of its evaluation table, each with the file it was read
from, the reference rows only when they come from the same profile.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline import paths

if TYPE_CHECKING:
    from pipeline.params import Params


class CardError(ValueError):
    """A model that cannot be exported as asked (e.g. a seed whose models were not kept)."""


@dataclass(frozen=True)
class Row:
    """One row of the card's evaluation table: its label, the file it was read from and
    what it covers."""

    label: str
    source: str
    covers: str
    values: Mapping[str, Any]


def count(x: object) -> str:
    """A count as people write it: ``117``, not the ``117.0`` a mean over seeds gives."""
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


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
    method: str, fold: int, root: Path = Path("."), seed: int | None = None,
    params: Params | None = None,
) -> Training:  # fmt: skip
    """:class:`Training` of ``method``'s fold ``fold`` model of ``seed`` (default: the first
    kept) from ``params`` (default: ``params.yaml`` loaded into its typed configs; a stage
    passes its own, so the witness sees what the card reads) and ``data/queries.parquet``
    (query counts left out when the data are not there)."""
    from pipeline.data import get_source  # params imports the model families' config
    from pipeline.params import load_params

    params = params if params is not None else load_params(root / "params.yaml")
    entry = params.methods[method]
    ordering = params.orderings.get(entry.ordering)
    source = params.dataset.source
    dataset = {"name": params.dataset.name, "section": get_source(params.dataset.name).section,
               "max_queries": getattr(source, "max_queries", None)}  # fmt: skip
    folds = params.dataset.folds
    n_train = n_test = None
    queries = root / paths.DATA / "queries.parquet"
    if queries.is_file():
        import polars as pl

        q = pl.read_parquet(queries, columns=["query_id", "fold"] if folds > 1 else ["split"])
        assigned = root / paths.FOLDS  # several fold assignments: fold ids beyond k
        if folds > 1 and assigned.is_file():
            q = pl.read_parquet(assigned).filter(pl.col("assignment") == fold // folds)
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


def training_lines(t: Training) -> list[str]:
    m = dict(t.method)
    loss = {k: v for k, v in m.items() if k not in ("ordering", "direction", "loss")}
    loss = {"loss": " + ".join(_terms(m.get("loss", {}))), **loss}
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


def _terms(loss: Mapping[str, Any] | list[Any]) -> list[str]:
    """A method's loss terms as the card writes them: ``penalty (docs: relevant, lambda:
    0.25)``; ``loss`` is the mapping term → settings (or the list of earlier records)."""
    if isinstance(loss, Mapping):
        items = [(str(n), dict(v or {})) for n, v in loss.items()]
    else:
        items = [(t, {}) if isinstance(t, str) else
                 (str(t["name"]), {k: v for k, v in t.items() if k != "name"}) for t in loss]
    return [f"{n} ({_inline(v)})" if v else n for n, v in items]


def _inline(d: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items())


def evaluation_rows(
    method: str, t: Training, root: Path = Path(".")
) -> tuple[list[Row], list[str]]:
    """The card's rows: this model's seed, the mean over seeds, and the reference rows of
    the same profile; and a note per reference row left out (another profile)."""
    sub = t.sub
    seed_file = paths.evals(method, sub) / "metrics.json"  # every key (metrics/: the headline)
    mean_file = paths.evals(method) / "metrics.json"
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
        rel = paths.evals(ref) / "metrics.json"
        if not (root / rel).is_file() or not rows:
            continue
        values = json.loads((root / rel).read_text())
        if same_profile(mine, values):
            rows.append(Row(ref, rel.as_posix(), what, values))
        else:
            notes.append(f"`{ref}` is left out: `{rel.as_posix()}` comes from "
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
