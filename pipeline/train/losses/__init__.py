"""Ranking losses: a plain dict registry keyed by the params.yaml method/loss name.

Every loss is ``loss(s_pos, s_neg, batch, params) -> Tensor`` (a scalar): ``s_pos`` and
``s_neg`` are the scores ``[batch]`` of the positive and negative document of each triple,
``batch`` carries per-triple float tensors ``psi_pos``, ``psi_neg`` (Ψ magnitudes) and
``zeta_pos``, ``zeta_neg`` (neutrality ζ), and ``params`` the method's numeric parameters.
One module per loss, named after its key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from torch import Tensor

from pipeline.train.losses import (
    margin,
    penalty_both,
    penalty_irrelevant,
    penalty_relevant,
    reward_both,
    reward_irrelevant,
    reward_relevant,
)

LossFn = Callable[[Tensor, Tensor, Mapping[str, Tensor], Mapping[str, float]], Tensor]

LOSSES: dict[str, LossFn] = {
    "margin": margin.loss,
    "penalty_irrelevant": penalty_irrelevant.loss,
    "penalty_relevant": penalty_relevant.loss,
    "penalty_both": penalty_both.loss,
    "reward_irrelevant": reward_irrelevant.loss,
    "reward_relevant": reward_relevant.loss,
    "reward_both": reward_both.loss,
}


def get_loss(name: str) -> LossFn:
    """The loss registered as ``name``; an unknown name raises ``ValueError`` listing them."""
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; known: {sorted(LOSSES)}") from None


__all__ = ["LOSSES", "LossFn", "get_loss"]
