"""Shared pieces of the inference-time methods (post-processors, SPEC §6.8): the record, the
document attributes a post-processor reads, per-list standardisation and re-ranking.

A post-processor maps a base model's run (``query_id, doc_id, score, rank``; a held-out
collection's run also has the ``fold`` of the model that ranked it) and the documents'
attributes to a new run of the same rows. It never trains and never reads the qrels. A list
is one query's ranking (one per fold model in a ``fold`` run); every function here works list
by list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipeline.errors import InputError
from pipeline.schemas import PSI_SOURCE

ATTRIBUTES = ("doc_id", "neutrality", *PSI_SOURCE.values(), "group")
"""The columns of the attribute table (:func:`attributes`): ζ, the signed Ψ columns and the
F/M/N group (null where a document has none)."""

PostFn = Callable[[pl.DataFrame, pl.DataFrame, Any], pl.DataFrame]
"""``fn(run, attributes, cfg)`` → the new run (``query_id, doc_id, score, rank``[, ``fold``])."""


@dataclass(frozen=True)
class PostProcessor:
    """One inference-time method: its ``name`` (the ``post.<entry>.processor`` value), the
    function, its typed ``Config`` (the entry's settings besides ``processor`` and ``base``)
    and the paper it follows."""

    name: str
    fn: PostFn
    config: type
    paper: str


def attributes(doc_scores: pl.DataFrame, corpus: pl.DataFrame | None) -> pl.DataFrame:
    """``doc_id, neutrality, psi_*, group`` of every scored document: ``doc_scores`` (the
    ``score`` stage) joined with the corpus's F/M/N ``group`` (null without one)."""
    frame = doc_scores.select("doc_id", "neutrality", *PSI_SOURCE.values())
    if corpus is not None and "group" in corpus.columns:
        groups = corpus.select(pl.col("doc_id").cast(pl.Utf8), pl.col("group").cast(pl.Utf8))
        return frame.join(groups, on="doc_id", how="left")
    return frame.with_columns(pl.lit(None, pl.Utf8).alias("group"))


def list_keys(run: pl.DataFrame) -> list[str]:
    """The columns that identify one ranked list: the query, and the fold model's ``fold``
    in a held-out collection's run."""
    return ["query_id", "fold"] if "fold" in run.columns else ["query_id"]


def with_attributes(run: pl.DataFrame, attrs: pl.DataFrame, what: str) -> pl.DataFrame:
    """``run`` joined with the attributes of its documents; a document without scores stops
    with its id (the run and the attributes are of different collections)."""
    joined = run.join(attrs, on="doc_id", how="left")
    missing = joined.filter(pl.col("neutrality").is_null())
    if missing.height:
        raise InputError(
            f"{what}: {missing.height} run rows name documents without Ψ/ζ scores, first "
            f"{missing['doc_id'][0]!r}; the base run and data/doc_scores.parquet are of different "
            "collections: rerun `dvc repro` so that both come from the same extract"
        )
    return joined


def standardised(score: str = "score", keys: list[str] | None = None) -> pl.Expr:
    """The per-list z-score of ``score`` (population std); 0 for a list whose scores are all
    equal. SPEC §6.8: a shift in these units does not depend on the model's score scale."""
    by = keys or ["query_id"]
    mean = pl.col(score).mean().over(by)
    std = pl.col(score).std(ddof=0).over(by)
    return pl.when(std > 0).then((pl.col(score) - mean) / std).otherwise(0.0)


def reranked(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """``frame`` (with the new ``score`` and the base ``rank``) sorted per list by score
    descending, equal scores in the base run's order; ``rank`` renumbered 1..n per list.
    Lists keep the order of their first appearance."""
    ordered = (
        frame.with_row_index("_row")
        .with_columns(pl.col("_row").min().over(keys).alias("_list"))
        .sort(["_list", "score", "rank"], descending=[False, True, False])
    )
    new_rank = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(keys).alias("rank")
    out = ordered.with_columns(new_rank).drop("_row", "_list")
    return out.select(*[c for c in ("query_id", "doc_id", "score", "rank", "fold")
                        if c in out.columns])  # fmt: skip


def check_run(run: pl.DataFrame, what: str) -> None:
    """A base run has the run columns and one row per (list, document)."""
    missing = sorted({"query_id", "doc_id", "score", "rank"} - set(run.columns))
    if missing:
        raise InputError(f"{what}: the base run lacks columns {missing}; has {run.columns}")
    keys = [*list_keys(run), "doc_id"]
    if run.select(keys).is_duplicated().any():
        first = run.filter(run.select(keys).is_duplicated()).row(0, named=True)
        raise InputError(f"{what}: the base run lists document {first['doc_id']!r} twice for "
                         f"query {first['query_id']!r}; rerun the base method's stage")  # fmt: skip
