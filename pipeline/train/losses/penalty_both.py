"""Penalty on biased documents on both sides of a triple (SPEC §6.2)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from pipeline.train.losses._pairwise import column, hinge, lambda_for, margin_of

NAME = "penalty_both"


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``mean(max(0, m - (tanh s⁺ + a⁺) + (tanh s⁻ + a⁻)))``.

    With ``a⁺ = +λ⁺ Ψ(d⁺), a⁻ = +λ⁻ Ψ(d⁻)``.
    Effect: biased positives get less push up and biased negatives more push down.
    Paper: Seyedsalehi et al., loss-regularisation journal paper (penalty and reward terms;
    code: shirinssalehi/LossRegularizationJournal).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['psi_pos']``, ``batch['psi_neg']``
    ``[batch]``; params ``lambda`` (overridden by ``lambda_pos`` / ``lambda_neg``) and
    ``margin`` (default 1).
    """
    a_pos = lambda_for(params, "pos", NAME) * column(batch, "psi_pos", s_pos, NAME)
    a_neg = lambda_for(params, "neg", NAME) * column(batch, "psi_neg", s_neg, NAME)
    return hinge(s_pos, s_neg, a_pos, a_neg, margin_of(params))
