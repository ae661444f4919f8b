"""EqualizeIR product of experts with a frozen weak learner (SPEC §6.3)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from pipeline.train.losses._listwise import grouped, masked_log_softmax
from pipeline.train.losses._pairwise import column

NAME = "poe"
DEFAULT_ALPHA = 0.1


def poe_log_probs(
    s_robust: Tensor, s_weak: Tensor, alpha: float, mask: Tensor | None = None
) -> Tensor:
    """``log z = log_softmax(α·log_softmax(s_B) + log_softmax(s_R))`` over the last axis
    (over the real entries of ``mask``). ``s_weak`` (f_B's scores) is detached: f_B is frozen.
    """
    if mask is None:
        mask = torch.ones_like(s_robust, dtype=torch.bool)
    weak = masked_log_softmax(s_weak.detach(), mask)
    robust = masked_log_softmax(s_robust, mask)
    return masked_log_softmax(alpha * weak.masked_fill(~mask, 0.0) + robust, mask)


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """Cross-entropy on the positive of ``log z`` over each training group's candidates.

    Effect: where the weak (biased) learner f_B already ranks the pair right the combined
    distribution is already confident, so the robust model f_R gets a smaller gradient; where
    f_B is wrong it gets a larger one. ``alpha = 0`` is plain 2-way cross-entropy. Only f_R
    is used at test time.
    Paper: EqualizeIR (weak learner + product of experts for equal performance across query
    complexity).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]`` of f_R; ``batch['weak_pos']``,
    ``batch['weak_neg']`` ``[batch]``, f_B's scores of the same documents; params ``alpha``
    (default 0.1).
    """
    robust, mask = grouped(s_pos, s_neg, batch)
    weak, _ = grouped(
        column(batch, "weak_pos", s_pos, NAME), column(batch, "weak_neg", s_neg, NAME), batch, 0.0
    )
    log_z = poe_log_probs(robust, weak, float(params.get("alpha", DEFAULT_ALPHA)), mask)
    return -log_z[:, 0].mean()
