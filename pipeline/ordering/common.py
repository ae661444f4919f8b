"""Shared pieces of the orderings: the context they receive, Ψ lookup and positions."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from pipeline.schemas import PSI_SOURCE

DIRECTIONS = ("low_to_high", "high_to_low")


@dataclass(frozen=True)
class OrderingContext:
    """What an ordering may read besides the triples.

    Every ordering: ``psi`` (which Ψ column, magnitude of the positive) and ``seed``.
    Curriculum (SPEC §6.1): ``n_buckets`` (``None`` = 'all', one triple per bucket), ``mu``
    (``None`` = min Ψ for ``low_to_high``, max Ψ for ``high_to_low``), ``sigma`` and
    ``direction`` (read by ``curriculum``; the named directions reject a contradicting one).
    LWS (SPEC §6.4): ``rate`` (share of triples whose negative is replaced), ``lws_top`` (draw
    among the query's ``lws_top`` most biased non-relevant candidates), ``candidates``
    (query_id, doc_id, rank) and ``qrels`` (query_id, doc_id, relevance).
    The defaults leave ``shuffle`` unaffected.
    """

    psi: str = "bool_abs"
    seed: int = 0
    n_buckets: int | None = None
    mu: float | None = None
    sigma: float = 1.0
    direction: str | None = None
    rate: float = 0.6
    lws_top: int = 5
    candidates: pl.DataFrame | None = field(default=None, repr=False, compare=False)
    qrels: pl.DataFrame | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        checks = {
            f"psi in {sorted(PSI_SOURCE)}": self.psi in PSI_SOURCE,
            "n_buckets >= 1 (or None for 'all')": self.n_buckets is None or self.n_buckets >= 1,
            "sigma > 0": self.sigma > 0,
            f"direction in {list(DIRECTIONS)} or None": self.direction in (None, *DIRECTIONS),
            "0 <= rate <= 1": 0 <= self.rate <= 1,
            "lws_top >= 1": self.lws_top >= 1,
        }
        failed = [rule for rule, ok in checks.items() if not ok]
        if failed:
            raise ValueError(f"invalid ordering context {self}: need {', '.join(failed)}")


def with_positive_psi(triples: pl.DataFrame, doc_scores: pl.DataFrame, psi: str) -> pl.DataFrame:
    """Attach `psi` = |Ψ| of each triple's positive document (0 for unscored documents)."""
    col = PSI_SOURCE[psi]
    scores = doc_scores.select(
        pl.col("doc_id").alias("pos_doc_id"), pl.col(col).abs().cast(pl.Float64).alias("psi")
    )
    out = triples.join(scores, on="pos_doc_id", how="left", maintain_order="left")
    return out.with_columns(pl.col("psi").fill_null(0.0))


def numbered(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with ``position`` = 0, 1, … in its row order (Int64)."""
    return frame.with_columns(pl.int_range(0, pl.len(), dtype=pl.Int64).alias("position"))


def seeded_shuffle(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Rows of ``frame`` in a uniformly random order drawn with ``seed``, numbered."""
    perm = np.random.default_rng(seed).permutation(frame.height)
    return numbered(frame[perm])


def filtered_by_psi(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, ctx: OrderingContext, keep: pl.Expr, name: str
) -> pl.DataFrame:
    """Triples whose positive satisfies ``keep`` (an expression on ``psi``), seeded shuffle.

    No triple left raises ``ValueError`` naming the ordering and the Ψ column.
    """
    scored = with_positive_psi(triples, doc_scores, ctx.psi)
    kept = scored.filter(keep)
    if kept.height == 0:
        raise ValueError(
            f"ordering {name!r} keeps none of the {triples.height} triples (psi={ctx.psi!r}, "
            f"{PSI_SOURCE[ctx.psi]}); choose another psi column or ordering"
        )
    return seeded_shuffle(kept, ctx.seed)
