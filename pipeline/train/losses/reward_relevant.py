"""Reward for a neutral relevant document (SPEC §6.2)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from pipeline.train.losses._pairwise import column, hinge, lambda_for, margin_of

NAME = "reward_relevant"


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``mean(max(0, m - (tanh s⁺ + a⁺) + (tanh s⁻ + a⁻)))`` with ``a⁺ = −λ⁺ ζ(d⁺)``.

    Effect: a neutral positive must be scored higher by a wider margin, so neutral documents are
    pushed up.
    Paper: Seyedsalehi et al., loss-regularisation journal paper (penalty and reward terms;
    code: shirinssalehi/LossRegularizationJournal).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['zeta_pos']`` ``[batch]``; params
    ``lambda`` (overridden by ``lambda_pos``) and ``margin`` (default 1).
    """
    a_pos = -lambda_for(params, "pos", NAME) * column(batch, "zeta_pos", s_pos, NAME)
    a_neg = 0.0
    return hinge(s_pos, s_neg, a_pos, a_neg, margin_of(params))
