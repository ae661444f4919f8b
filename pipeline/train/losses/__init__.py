"""Ranking losses: a plain dict registry keyed by the params.yaml method/loss name.

Every loss is ``loss(s_pos, s_neg, batch, params) -> Tensor`` (a scalar): ``s_pos`` and
``s_neg`` are the scores ``[batch]`` of the positive and negative document of each triple,
``batch`` carries per-triple float tensors ``psi_pos``, ``psi_neg`` (Ψ magnitudes) and
``zeta_pos``, ``zeta_neg`` (neutrality ζ), and ``params`` the method's numeric parameters.
One module per loss, named after its key. ``poe`` also reads ``weak_pos``, ``weak_neg`` (the
frozen weak learner's scores, see ``pipeline.train.weak``); the keys each loss reads are in
``BATCH_KEYS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from torch import Tensor

from pipeline.train.losses import (
    margin,
    neutrality_kl,
    penalty_both,
    penalty_irrelevant,
    penalty_relevant,
    poe,
    pointwise_penalty_both,
    pointwise_penalty_irrelevant,
    pointwise_penalty_relevant,
    pointwise_reward_both,
    pointwise_reward_irrelevant,
    pointwise_reward_relevant,
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
    "pointwise_penalty_irrelevant": pointwise_penalty_irrelevant.loss,
    "pointwise_penalty_relevant": pointwise_penalty_relevant.loss,
    "pointwise_penalty_both": pointwise_penalty_both.loss,
    "pointwise_reward_irrelevant": pointwise_reward_irrelevant.loss,
    "pointwise_reward_relevant": pointwise_reward_relevant.loss,
    "pointwise_reward_both": pointwise_reward_both.loss,
    "neutrality_kl": neutrality_kl.loss,
    "poe": poe.loss,
}

_PSI = ("psi_pos", "psi_neg")
_ZETA = ("zeta_pos", "zeta_neg")
BATCH_KEYS: dict[str, tuple[str, ...]] = {
    "margin": (),
    "penalty_irrelevant": ("psi_neg",),
    "penalty_relevant": ("psi_pos",),
    "penalty_both": _PSI,
    "reward_irrelevant": ("zeta_neg",),
    "reward_relevant": ("zeta_pos",),
    "reward_both": _ZETA,
    "pointwise_penalty_irrelevant": ("psi_neg",),
    "pointwise_penalty_relevant": ("psi_pos",),
    "pointwise_penalty_both": _PSI,
    "pointwise_reward_irrelevant": ("zeta_neg",),
    "pointwise_reward_relevant": ("zeta_pos",),
    "pointwise_reward_both": _ZETA,
    "neutrality_kl": _ZETA,
    "poe": ("weak_pos", "weak_neg"),
}
"""Batch tensors (``[batch]`` floats) each loss reads besides the scores."""


def get_loss(name: str) -> LossFn:
    """The loss registered as ``name``; an unknown name raises ``ValueError`` listing them."""
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; known: {sorted(LOSSES)}") from None


__all__ = ["BATCH_KEYS", "LOSSES", "LossFn", "get_loss"]
