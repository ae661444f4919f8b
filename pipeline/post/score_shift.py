"""`score_shift`: the base model's scores moved by each document's bias, no training.

``s'(q, d) = s̃(q, d) − λ · a(d)`` with ``s̃`` the base score standardised per list (z-score,
so λ is in units of the list's score spread and does not depend on the model's scale) and
``a(d) = 1 − ζ(d)`` (``attribute: neutrality``; ζ the document neutrality behind NFaiRR,
Rekabsaz, Kopeinik & Schedl SIGIR 2021) or ``a(d) = |Ψ(d)|`` (``attribute: bias``, the
``psi`` column, Rekabsaz & Schedl SIGIR 2020). Then each list is ranked by ``s'``, equal
scores in the base run's order. λ = 0 is the identity ranking. The simplest inference-time
baseline of fair ranking (SPEC §6.8): a bias-aware *training* method should beat it.
Inputs: the base run; ``neutrality`` or the Ψ column of ``data/doc_scores.parquet``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import polars as pl

from pipeline.config import Checked, Range
from pipeline.post.common import PostProcessor, list_keys, reranked, standardised, with_attributes
from pipeline.schemas import PSI_SOURCE, PsiColumn


@dataclass(frozen=True)
class ScoreShiftConfig(Checked):
    """``lambda`` (≥ 0): the shift per unit of ``attribute`` (``neutrality``: 1 − ζ, or
    ``bias``: |Ψ| of the ``psi`` column), in units of the list's score standard deviation."""

    lambda_: Annotated[float, Range(ge=0)] = 0.1
    attribute: Literal["neutrality", "bias"] = "neutrality"
    psi: PsiColumn = "tf_abs"


def amount(cfg: ScoreShiftConfig) -> pl.Expr:
    """``a(d)``: what the shift multiplies."""
    if cfg.attribute == "neutrality":
        return 1.0 - pl.col("neutrality")
    return pl.col(PSI_SOURCE[cfg.psi]).abs()


def score_shift(run: pl.DataFrame, attrs: pl.DataFrame, cfg: ScoreShiftConfig) -> pl.DataFrame:
    """The run re-ranked by ``s̃ − λ·a(d)`` per list (module docstring)."""
    keys = list_keys(run)
    joined = with_attributes(run, attrs, "score_shift")
    shifted = standardised("score", keys) - cfg.lambda_ * amount(cfg)
    return reranked(joined.with_columns(shifted.alias("score")), keys)


RECORD = PostProcessor(
    "score_shift", score_shift, ScoreShiftConfig,
    "Rekabsaz, Kopeinik & Schedl, SIGIR 2021 (ζ, NFaiRR); SPEC §6.8",
)  # fmt: skip
