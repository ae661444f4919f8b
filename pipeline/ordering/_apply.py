"""Running an ordering record over the triples, fold by fold, and summarising the order."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import polars as pl

from pipeline.errors import InputError
from pipeline.ordering.common import Inputs, Ordering, Seed, rng

logger = logging.getLogger(__name__)

FOLD = "fold"
SEED = "seed"
DRAW = "draw"
TENTHS = 10
DRAW_STREAM = 7  # the negatives' draw uses its own stream of the run's seed


def draw_negatives(triples: pl.DataFrame, seed: Seed) -> pl.DataFrame:
    """The triples a run trains on: fixed triples (``draw`` null or absent) as they are, and
    of the options of a sampled negative, ``draw`` negatives per query (and source) drawn
    uniformly without replacement with ``seed`` and kept for every positive of the query
    (issue 21: the seed varies the sampled negatives as well as the order). Sharing them
    keeps a query's F/M/N positives against the same negatives, so the versions differ only
    in gender, and a batch of one query encodes 2 sampled texts instead of up to 6. Output
    without ``draw``, in the input's order."""
    if DRAW not in triples.columns:
        return triples
    options = triples.filter(pl.col(DRAW).is_not_null())
    if options.height == 0:
        return triples.drop(DRAW)
    by = ["query_id", *(["source"] if "source" in triples.columns else [])]
    unique = options.select(*by, "neg_doc_id", DRAW).unique().sort(*by, "neg_doc_id")
    noise = pl.Series("_u", rng(seed, DRAW_STREAM).random(unique.height))
    chosen = unique.with_columns(noise).filter(pl.col("_u").rank("ordinal").over(by)
                                                <= pl.col(DRAW))  # fmt: skip
    drawn = options.join(chosen.select(*by, "neg_doc_id"), on=[*by, "neg_doc_id"], how="semi",
                         maintain_order="left")  # fmt: skip
    keep = pl.concat([triples.with_row_index("_i").filter(pl.col(DRAW).is_null()),
                      triples.with_row_index("_i").join(drawn.select(*by, "pos_doc_id",
                                                                     "neg_doc_id"),
                                                        on=[*by, "pos_doc_id", "neg_doc_id"],
                                                        how="semi")])  # fmt: skip
    return keep.sort("_i").drop("_i", DRAW)


def _fold_rows(frame: pl.DataFrame, fold: int) -> pl.DataFrame:
    """One fold's rows of a table with a ``fold`` column (without it); others whole."""
    if FOLD not in frame.columns:
        return frame
    return frame.filter(pl.col(FOLD) == fold).drop(FOLD)


def apply_ordering(
    record: Ordering,
    triples: pl.DataFrame,
    doc_scores: pl.DataFrame,
    cfg: Any,
    *,
    psi: str,
    seed: int,
    direction: str | None = None,
    tables: Mapping[str, pl.DataFrame] | None = None,
    method: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """The triples in ``record``'s training order.

    Without a ``fold`` column: one call, seeded with ``seed``. With one (k-fold
    cross-validation, SPEC §7: the fold whose model trains on the triple): the ordering runs
    once per fold in ascending fold order on that fold's triples and that fold's rows of
    every table with a ``fold`` column (LWS: the fold's training candidates), seeded with
    ``(seed, fold)``; positions restart at 0 in every fold and the output keeps ``fold``.
    Sampled negatives (a ``draw`` column) are drawn first with the same seed
    (:func:`draw_negatives`). ``method``: the method's own keys that the record declares
    (``MethodParams.ordering_keys``, e.g. ``{direction: high_to_low}``); ``direction`` is
    ``method["direction"]`` when not given.
    """
    tables, method = dict(tables or {}), dict(method or {})
    direction = direction if direction is not None else method.get("direction")
    if FOLD not in triples.columns:
        drawn = draw_negatives(triples, seed)
        return record.fn(drawn, doc_scores, cfg, Inputs(psi, seed, direction, tables, method))
    if triples[FOLD].null_count():
        raise InputError(
            f"triples: {triples[FOLD].null_count()} rows have no fold; every triple must name "
            "the fold whose model trains on it (rerun the extract stage)"
        )
    parts = []
    for fold in sorted(triples[FOLD].unique().to_list()):
        inp = Inputs(
            psi, (seed, fold), direction, {n: _fold_rows(t, fold) for n, t in tables.items()},
            method,
        )
        drawn = draw_negatives(_fold_rows(triples, fold), (seed, fold))
        out = record.fn(drawn, doc_scores, cfg, inp)
        parts.append(out.with_columns(pl.lit(fold, dtype=pl.Int64).alias(FOLD)))
        logger.info("%s: fold %d, %d triples ordered", record.name, fold, out.height)
    return pl.concat(parts)


def psi_profile(ordered: pl.DataFrame, group_size: int | None = None) -> tuple[float, pl.DataFrame]:
    """How Ψ⁺ moves through training (issue 14 item 6): ``(ρ, frame)``.

    ρ is Spearman's correlation of training progress and ``psi`` (Ψ of the positive), ties
    at their mean rank; progress is ``position / n`` with ``n`` the triples of the
    position's fold (and seed): without folds, ρ = Spearman(position, Ψ⁺). ``frame`` has one
    row per tenth of training, ``tenth = ⌊10 · progress⌋`` (0–9): ``tenth``, ``psi_mean``
    (mean Ψ⁺), ``biased_share`` (share with Ψ⁺ > 0), ``triples``. ρ is NaN when Ψ⁺ is
    constant. With ``group_size`` the order is measured *as trained* (issue 21): the trainer
    cuts a fold's triples into groups of one positive and ``group_size − 1`` negatives, each
    at its first triple's position (``pipeline.train.groups``), so ρ and the tenths are
    computed over the groups in that order.
    """
    keys = [k for k in (SEED, FOLD) if k in ordered.columns]
    if group_size is not None:
        ordered = as_trained(ordered, group_size)
    n = pl.len().over(keys) if keys else pl.len()
    progress = ordered.select(
        (pl.col("position") / n).alias("progress"), pl.col("psi").cast(pl.Float64)
    )
    constant = progress.height < 2 or progress["psi"].n_unique() < 2
    rho = (
        float("nan")
        if constant
        else float(progress.select(pl.corr("progress", "psi", method="spearman")).item())
    )
    frame = (
        progress.with_columns((pl.col("progress") * TENTHS).floor().cast(pl.Int64).alias("tenth"))
        .group_by("tenth")
        .agg(
            pl.col("psi").mean().alias("psi_mean"),
            (pl.col("psi") > 0).mean().alias("biased_share"),
            pl.len().cast(pl.Int64).alias("triples"),
        )
        .sort("tenth")
    )
    return rho, frame


def as_trained(ordered: pl.DataFrame, group_size: int) -> pl.DataFrame:
    """One row per training group, in training order: the groups the trainer forms from each
    (seed,) fold's triples (``pipeline.train.groups.make_groups``: by query and positive, in
    order of first appearance, ``group_size − 1`` negatives a group), with the group's
    ``position`` (0, 1, … in that order) and its positive's ``psi``."""
    keys = [k for k in (SEED, FOLD) if k in ordered.columns]
    per = group_size - 1
    chunk = (pl.int_range(pl.len()).over([*keys, "query_id", "pos_doc_id"]) // per).alias("_c")
    first = (
        ordered.sort([*keys, "position"])
        .with_columns(chunk)
        .group_by([*keys, "query_id", "pos_doc_id", "_c"], maintain_order=True)
        .agg(pl.col("position").first().alias("_p"), pl.col("psi").first())
        .sort([*keys, "_p"])
    )
    pos = pl.int_range(pl.len()).over(keys) if keys else pl.int_range(pl.len())
    return first.with_columns(pos.cast(pl.Int64).alias("position")).drop("_c", "_p")
