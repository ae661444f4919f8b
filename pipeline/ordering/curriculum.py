"""`curriculum`: the bias-aware curriculum, in the direction each method sets (SPEC §6.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import polars as pl

from pipeline.config import Checked, Range
from pipeline.ordering._curriculum import curriculum_order
from pipeline.ordering.common import Inputs, Ordering
from pipeline.schemas import Direction, PsiColumn


@dataclass(frozen=True)
class CurriculumConfig(Checked):
    """``orderings.curriculum``: shared by every method with ``ordering: curriculum``.

    ``psi``: the Ψ column the curriculum sorts by (|psi_tf| in the paper), independent of the
    method's own ``psi`` (which its loss reads). ``n_buckets``: equal-size Ψ buckets, or
    ``all`` = one triple per bucket. ``mu``: centre of the Gaussian bucket weights; ``None``
    = min (``low_to_high``) or max (``high_to_low``) of the values. ``sigma``: its width.
    ``seed``: ``None`` = the run seed (each of ``train.seeds`` draws its own order).
    ``mu_units``: ``value`` (Ψ, the paper) or ``rank`` (Ψ's rank quantile in [0, 1], so both
    directions are equally strict; see docs/decisions.md).
    """

    psi: PsiColumn = "tf_abs"
    n_buckets: Annotated[int, Range(ge=1)] | Literal["all"] = 10
    mu: float | None = None
    sigma: Annotated[float, Range(gt=0)] = 1.0
    seed: int | None = None
    mu_units: Literal["value", "rank"] = "value"

    def buckets(self) -> int | None:
        """``n_buckets`` as the sampler takes it: ``None`` for ``all``."""
        return None if self.n_buckets == "all" else int(self.n_buckets)


def curriculum(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, cfg: CurriculumConfig, inp: Inputs
) -> pl.DataFrame:
    """Bias-aware curriculum: triples sorted by Ψ of the positive are split into
    ``cfg.n_buckets`` equal buckets with weights ``P_i ∝ exp(−(x_i − μ)²/(2σ²))`` (``x_i`` =
    bucket mean Ψ); the order is drawn by the SPEC's bucket sampler (``race_order``), so
    every triple is used once and off-centre triples are only delayed.

    ``inp.direction``: ``low_to_high`` (default: neutral first, μ = min Ψ) or
    ``high_to_low`` (biased first, μ = max Ψ). Adds column ``bucket`` (0 = lowest Ψ).
    Paper: bias-aware curriculum learning for neural rankers (the curriculum paper, SPEC §6.1).
    Inputs: triples, ``doc_scores``; ``orderings.curriculum`` (``psi``, ``n_buckets``,
    ``mu``, ``sigma``, ``seed``, ``mu_units``); ``methods.<m>.direction``.
    """
    return curriculum_order(
        triples,
        doc_scores,
        psi=cfg.psi,
        n_buckets=cfg.buckets(),
        mu=cfg.mu,
        sigma=cfg.sigma,
        seed=inp.rng_seed(cfg.seed),
        direction=inp.direction or "low_to_high",
        mu_units=cfg.mu_units,
    )


@dataclass(frozen=True)
class CurriculumMethod:
    """The curriculum's per-method key: ``methods.<m>.direction`` (unset: low to high)."""

    direction: Direction | None = None


RECORD = Ordering("curriculum", curriculum, CurriculumConfig, method_keys=("direction",),
                  method_config=CurriculumMethod)  # fmt: skip
