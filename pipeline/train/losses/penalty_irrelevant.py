"""Penalty on a biased non-relevant document (SPEC §6.2)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from pipeline.train.losses._pairwise import column, hinge, lambda_for, margin_of

NAME = "penalty_irrelevant"


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``mean(max(0, m - (tanh s⁺ + a⁺) + (tanh s⁻ + a⁻)))`` with ``a⁻ = +λ⁻ Ψ(d⁻)``.

    Effect: a biased negative must be beaten by a wider margin, so biased documents are pushed
    down.
    Paper: Seyedsalehi et al., EDBT 2022 (bias-aware loss, exactly this loss with Ψ =
    |psi_bool|); Seyedsalehi et al., loss-regularisation journal paper (penalty and reward
    terms; code: shirinssalehi/LossRegularizationJournal).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['psi_neg']`` ``[batch]``; params
    ``lambda`` (overridden by ``lambda_neg``) and ``margin`` (default 1).
    """
    a_pos = 0.0
    a_neg = lambda_for(params, "neg", NAME) * column(batch, "psi_neg", s_neg, NAME)
    return hinge(s_pos, s_neg, a_pos, a_neg, margin_of(params))
