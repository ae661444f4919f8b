"""Running an ordering record over the triples, fold by fold, and summarising the order."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import polars as pl

from pipeline.errors import InputError
from pipeline.ordering.common import Inputs, Ordering

logger = logging.getLogger(__name__)

FOLD = "fold"
TENTHS = 10


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
) -> pl.DataFrame:
    """The triples in ``record``'s training order.

    Without a ``fold`` column: one call, seeded with ``seed``. With one (k-fold
    cross-validation, SPEC §7: the fold whose model trains on the triple): the ordering runs
    once per fold in ascending fold order on that fold's triples and that fold's rows of
    every table with a ``fold`` column (LWS: the fold's training candidates), seeded with
    ``(seed, fold)``; positions restart at 0 in every fold and the output keeps ``fold``.
    """
    tables = dict(tables or {})
    if FOLD not in triples.columns:
        return record.fn(triples, doc_scores, cfg, Inputs(psi, seed, direction, tables))
    if triples[FOLD].null_count():
        raise InputError(
            f"triples: {triples[FOLD].null_count()} rows have no fold; every triple must name "
            "the fold whose model trains on it (rerun the extract stage)"
        )
    parts = []
    for fold in sorted(triples[FOLD].unique().to_list()):
        inp = Inputs(
            psi, (seed, fold), direction, {n: _fold_rows(t, fold) for n, t in tables.items()}
        )
        out = record.fn(_fold_rows(triples, fold), doc_scores, cfg, inp)
        parts.append(out.with_columns(pl.lit(fold, dtype=pl.Int64).alias(FOLD)))
        logger.info("%s: fold %d, %d triples ordered", record.name, fold, out.height)
    return pl.concat(parts)


def psi_profile(ordered: pl.DataFrame) -> tuple[float, pl.DataFrame]:
    """How Ψ⁺ moves through training (issue 14 item 6): ``(ρ, frame)``.

    ρ is Spearman's correlation of training progress and ``psi`` (Ψ of the positive), ties
    at their mean rank; progress is ``position / n`` with ``n`` the triples of the
    position's fold (without folds: ρ = Spearman(position, Ψ⁺)). ``frame`` has one row per
    tenth of training, ``tenth = ⌊10 · progress⌋`` (0–9): ``tenth``, ``psi_mean`` (mean Ψ⁺),
    ``biased_share`` (share with Ψ⁺ > 0), ``triples``. ρ is NaN when Ψ⁺ is constant.
    """
    keys = [FOLD] if FOLD in ordered.columns else []
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
