"""EqualizeIR product of experts with a frozen weak learner (SPEC §6.3)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from pipeline.train.losses._pairwise import column

NAME = "poe"
DEFAULT_ALPHA = 0.1


def poe_log_probs(s_robust: Tensor, s_weak: Tensor, alpha: float) -> Tensor:
    """``log z = log_softmax(α·log_softmax(s_B) + log_softmax(s_R))`` over the last axis.

    ``s_weak`` (f_B's scores) is detached: the weak learner stays frozen.
    """
    weak = torch.log_softmax(s_weak.detach(), dim=-1)
    return torch.log_softmax(alpha * weak + torch.log_softmax(s_robust, dim=-1), dim=-1)


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """Cross-entropy on the positive of ``log z`` over the candidates ``{pos, neg}``.

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
    robust = torch.stack([s_pos, s_neg], dim=-1)
    weak = torch.stack(
        [column(batch, "weak_pos", s_pos, NAME), column(batch, "weak_neg", s_neg, NAME)], dim=-1
    )
    log_z = poe_log_probs(robust, weak, float(params.get("alpha", DEFAULT_ALPHA)))
    return -log_z[..., 0].mean()
