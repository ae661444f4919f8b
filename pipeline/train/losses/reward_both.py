"""Reward for neutral documents on both sides of a triple (SPEC §6.2)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from pipeline.train.losses._pairwise import column, hinge, lambda_for, margin_of

NAME = "reward_both"


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``mean(max(0, m - (tanh s⁺ + a⁺) + (tanh s⁻ + a⁻)))``.

    With ``a⁺ = −λ⁺ ζ(d⁺), a⁻ = −λ⁻ ζ(d⁻)``.
    Effect: neutral positives are pushed up harder and neutral negatives are easier to beat.
    Paper: Seyedsalehi et al., loss-regularisation journal paper (penalty and reward terms;
    code: shirinssalehi/LossRegularizationJournal).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['zeta_pos']``, ``batch['zeta_neg']``
    ``[batch]``; params ``lambda`` (overridden by ``lambda_pos`` / ``lambda_neg``) and
    ``margin`` (default 1).
    """
    a_pos = -lambda_for(params, "pos", NAME) * column(batch, "zeta_pos", s_pos, NAME)
    a_neg = -lambda_for(params, "neg", NAME) * column(batch, "zeta_neg", s_neg, NAME)
    return hinge(s_pos, s_neg, a_pos, a_neg, margin_of(params))
