"""Nested selection of the training recipe on the training folds (issue 29).

The default recipe (``train.lr``, ``model.bi_encoder.temperature``; docs/decisions.md "What
was tried for the default recipe") was tuned by looking at the test queries. Here each outer
fold ``f`` of the k-fold split (SPEC §7) picks its values from a small grid using only its
own training queries: they are split again into ``inner_folds`` folds (stratified by
category, seeded, as ``assign_folds`` splits the collection), a model of ``method`` is
trained for every grid point, seed and inner fold on the other inner folds' queries, and it
reranks its inner fold's BM25 candidates (over the inner fold's documents, filled as the
outer lists are). A point's score is the mean over seeds of ``criterion`` over all inner
validation queries; the best point is fold ``f``'s choice. Fold ``f``'s test queries and
documents are never read.

Leak-free by construction: an inner model trains on the outer fold's triples whose query
*and* negative document belong to its inner training queries (the BM25 negatives of the
outer triples may come from any outer training query, including the inner validation ones;
those rows are dropped), and its inner validation candidates hold only the inner validation
queries' documents. Needs a source whose documents belong to queries (the qrels name each
document's query) and a k-fold split: Grep-BiasIR.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from torch import Tensor

from pipeline.config import ParamsError
from pipeline.data.grep_biasir import assign_folds
from pipeline.errors import InputError
from pipeline.metrics.runner import Shared, evaluate_run
from pipeline.models.base import Key, Ranker
from pipeline.models.registry import load_ranker
from pipeline.ordering import apply_ordering, get_ordering
from pipeline.params import EvaluateParams, Params
from pipeline.progress import progress
from pipeline.rerank import rerank_folds
from pipeline.retrieval.folds import fold_candidates
from pipeline.train.method import train_method

log = logging.getLogger(__name__)

TUNABLE_MODEL = ("temperature", "similarity")
"""A model family's keys (``model.<arch>.<key>``) a grid may vary: the ``features`` stage's
cached frozen-bottom states do not depend on them (every ``train`` key may vary)."""


@dataclass(frozen=True)
class Tables:
    """The pipeline's tables the selection reads (``data/``)."""

    queries: pl.DataFrame
    corpus: pl.DataFrame
    qrels: pl.DataFrame
    triples: pl.DataFrame
    doc_scores: pl.DataFrame
    groups: pl.DataFrame | None
    texts: tuple[Mapping[str, str], Mapping[str, str]]
    features: Mapping[Key, Tensor]


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """``["train.lr=1e-4,2e-4", ...]`` → ``{"train.lr": [1e-4, 2e-4]}`` (YAML scalars;
    a string that reads as a number is that number)."""
    import yaml

    grid: dict[str, list[Any]] = {}
    for item in items:
        key, eq, values = item.partition("=")
        if not eq or not values.strip():
            raise InputError(f"grid item {item!r}: expected `section.key=v1,v2,...`")
        grid[key.strip()] = [_scalar(yaml.safe_load(v)) for v in values.split(",")]
    return grid


def _scalar(value: Any) -> Any:
    """YAML 1.1 reads ``1e-4`` as a string: a number it is."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def with_values(params: Params, values: Mapping[str, Any]) -> Params:
    """``params`` with each key of ``values`` replaced (validated by its typed config): a
    ``train.<key>``, or a model family's ``model.<arch>.temperature|similarity``."""
    out = params
    for key, value in values.items():
        parts = key.split(".")
        config: Any
        if parts[0] == "train" and len(parts) == 2:
            config, name = out.train, parts[1]
        elif parts[0] == "model" and len(parts) == 3 and parts[2] in TUNABLE_MODEL:
            config, name = out.model.families.get(parts[1]), parts[2]
        else:
            config, name = None, ""
        if config is None or name not in {f.name for f in dataclasses.fields(config)}:
            raise InputError(
                f"grid key {key!r}: choose a `train.<key>` or a family's "
                f"`model.<arch>.{{{','.join(TUNABLE_MODEL)}}}` (other model keys change the "
                "cached features: rerun the pipeline instead)"
            )
        try:
            changed = dataclasses.replace(config, **{name: value})
        except ParamsError as err:
            raise InputError(f"grid key {key!r}: {err}") from err
        if parts[0] == "train":
            out = dataclasses.replace(out, train=changed)
        else:
            families = {**out.model.families, parts[1]: changed}
            out = dataclasses.replace(out, model=dataclasses.replace(out.model, families=families))
    return out


def points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the grid's key order."""
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def inner_split(t: Tables, fold: int, inner_folds: int, seed: int) -> pl.DataFrame:
    """Outer fold ``fold``'s training queries with their inner ``fold`` (``assign_folds``)."""
    train = t.queries.filter(pl.col("fold").ne_missing(fold)).drop("fold")
    if train.height < inner_folds:
        raise InputError(f"outer fold {fold}: {train.height} training queries cannot be split "
                         f"into {inner_folds} inner folds")  # fmt: skip
    return assign_folds(train, inner_folds, seed)


def inner_tables(t: Tables, fold: int, inner: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(corpus, triples)`` of the inner split: the inner queries' documents with their
    inner ``fold``; per inner fold j the outer fold's triples whose query and negative
    belong to the other inner folds (``fold`` = j, the inner model that trains on them)."""
    owner = t.qrels.select("doc_id", "query_id").unique("doc_id").join(
        inner.select("query_id", "fold"), on="query_id"
    )  # fmt: skip
    corpus = t.corpus.drop("fold", "split", strict=False).join(
        owner.select("doc_id", "fold"), on="doc_id"
    )  # fmt: skip
    outer = t.triples.filter(pl.col("fold") == fold).drop("fold", "assignment", strict=False)
    parts = []
    for j in sorted(inner["fold"].unique().to_list()):
        train_q = inner.filter(pl.col("fold") != j)["query_id"].implode()
        negs = owner.filter(pl.col("fold") != j)["doc_id"].implode()
        keep = pl.col("query_id").is_in(train_q) & pl.col("neg_doc_id").is_in(negs)
        parts.append(outer.filter(keep).with_columns(pl.lit(j, pl.Int64).alias("fold")))
    return corpus, pl.concat(parts)


ALIGNMENTS = pl.DataFrame(schema={"doc_id": pl.Utf8, "dimension": pl.Utf8, "group": pl.Utf8,
                                  "weight": pl.Float64})  # fmt: skip
SHOWN = ("MRR@10", "nDCG@10", "NFaiRR@10")
"""Metrics recorded for every grid point besides the criterion."""


def inner_candidates(
    params: Params, t: Tables, corpus: pl.DataFrame, inner: pl.DataFrame
) -> pl.DataFrame:
    """Each inner fold's BM25 candidates over its own documents, filled as the outer lists
    (``pipeline.retrieval.folds.fold_candidates``)."""
    judged = dict(t.qrels.group_by("query_id").agg("doc_id").iter_rows())
    folds = sorted(inner["fold"].unique().to_list())
    return pl.concat([fold_candidates(corpus, inner, j, True, params.candidates, judged=judged)
                      for j in folds])  # fmt: skip


def score_point(
    params: Params, method: str, t: Tables, triples: pl.DataFrame, cands: pl.DataFrame,
    work: Path, criterion: str,
) -> list[dict[str, Any]]:  # fmt: skip
    """Train ``method``'s inner models with ``params`` (every seed of ``train.seeds`` and
    inner fold) into ``work``, rerank the inner candidates; per seed, ``criterion`` and
    ``SHOWN`` over the inner validation queries."""
    m = params.methods[method]
    record = get_ordering(m.ordering)
    if set(record.needs) - {"qrels"}:
        raise InputError(
            f"method {method!r}: its ordering {m.ordering!r} reads {sorted(record.needs)}; "
            "select the recipe with the baseline's ordering (shuffle)"
        )
    tables = {"qrels": t.qrels} if "qrels" in record.needs else {}
    runs = params.train.seed_runs()
    parts = []
    for seed, sub in runs:
        config = params.ordering_config(method)
        ordered = apply_ordering(record, triples, t.doc_scores, config, psi=m.psi, seed=seed,
                                 method=m.ordering_keys, tables=tables)  # fmt: skip
        parts.append(ordered.with_columns(pl.lit(seed, pl.Int64).alias("seed")) if sub else ordered)
    train_method(params, method, pl.concat(parts), t.texts, t.doc_scores, work, t.features)
    shared = Shared(t.qrels, t.doc_scores, cands, t.groups, ALIGNMENTS, None)
    rows = []
    for seed, sub in runs:
        def load(j: int, d: str = sub) -> Ranker:
            return load_ranker(work / d / f"fold-{j}")

        run, _ = rerank_folds(load, cands, t.texts, params.rerank.batch_size, t.features)
        agg, _ = evaluate_run(run, shared, EvaluateParams(cutoffs=[10]))
        rows.append({"seed": seed, **{k: agg.get(k) for k in dict.fromkeys((criterion, *SHOWN))}})
    return rows


def select(
    params: Params, t: Tables, grid: Mapping[str, Sequence[Any]], *, method: str,
    criterion: str = "MRR@10", inner_folds: int = 2, seed: int | None = None,
    work_root: Path | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:  # fmt: skip
    """``(scores, choices)``: every (outer fold, grid point, seed)'s inner-validation
    metrics, and per outer fold the point with the highest mean ``criterion`` over seeds
    (ties: the point equal to ``params``, then grid order), with its score and whether it
    is what ``params`` uses. ``seed``: of the inner split (``dataset`` split seed if None);
    ``work_root``: where the inner models are saved while a point is scored (a temporary
    folder, deleted after the point; the system's temporary directory if None)."""
    grid_points = points(grid)
    for point in grid_points:
        with_values(params, point)  # every key and value is valid before anything trains
    split_seed = int(getattr(params.dataset.source, "split_seed", 0)) if seed is None else seed
    current = {k: _get(params, k) for k in grid}
    rows: list[dict[str, Any]] = []
    folds = sorted(t.queries["fold"].drop_nulls().unique().to_list())
    for fold in folds:
        inner = inner_split(t, fold, inner_folds, split_seed)
        corpus, triples = inner_tables(t, fold, inner)
        cands = inner_candidates(params, t, corpus, inner)
        for point in progress(grid_points, desc=f"outer fold {fold}", unit="point"):
            work = Path(tempfile.mkdtemp(prefix="select-", dir=work_root))
            try:
                scored = score_point(with_values(params, point), method, t, triples, cands, work,
                                     criterion)  # fmt: skip
            finally:
                shutil.rmtree(work, ignore_errors=True)
            rows += [{"outer_fold": fold, **point, "inner_queries": inner.height, **r}
                     for r in scored]  # fmt: skip
    scores = pl.DataFrame(rows)
    return scores, choose(scores, list(grid), criterion, current)


def choose(
    scores: pl.DataFrame, keys: Sequence[str], criterion: str, current: Mapping[str, Any]
) -> pl.DataFrame:
    """Per outer fold, the grid point with the highest mean ``criterion`` over seeds (ties:
    the ``current`` point, then the first in ``scores``' order)."""
    mean = scores.group_by("outer_fold", *keys, maintain_order=True).agg(
        pl.col(criterion).mean().alias("score"), pl.col(criterion).std().alias("seed_std"),
        pl.len().alias("seeds"),
    )  # fmt: skip
    is_current = pl.all_horizontal(pl.col(k) == v for k, v in current.items())
    ranked = mean.with_columns(is_current.alias("is_current"), pl.int_range(pl.len()).alias("_i"))
    best = ranked.sort(["outer_fold", "score", "is_current", "_i"],
                       descending=[False, True, True, False])  # fmt: skip
    return best.group_by("outer_fold", maintain_order=True).first().drop("_i")


def _get(params: Params, key: str) -> Any:
    """The current value of a grid key: ``train.<key>`` or ``model.<arch>.<key>``."""
    parts = key.split(".")
    if parts[0] == "model" and len(parts) == 3:
        return getattr(params.model.families[parts[1]], parts[2])
    return getattr(getattr(params, parts[0]), parts[-1])
