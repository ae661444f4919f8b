"""Pointwise reward for neutral documents on both sides of a triple (SPEC §6.2)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from pipeline.train.losses._pairwise import column, lambda_for
from pipeline.train.losses._pointwise import squared_error

NAME = "pointwise_reward_both"


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``mean((sigmoid(s + r) − y)²)`` over both documents, ``r = −λζ·mask``, mask ``1``.

    Effect: neutral positives are pushed up harder and neutral negatives down less.
    **Decision**: ζ as the paper says (the published code uses Ψ), with separate
    ``lambda_pos``/``lambda_neg``.
    Paper: Seyedsalehi et al., loss-regularisation journal paper (pointwise reward terms;
    code: shirinssalehi/LossRegularizationJournal).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['zeta_pos']``, ``batch['zeta_neg']``
    ``[batch]``; params ``lambda`` (overridden by ``lambda_pos`` / ``lambda_neg``).
    """
    r_pos = -lambda_for(params, "pos", NAME) * column(batch, "zeta_pos", s_pos, NAME)
    r_neg = -lambda_for(params, "neg", NAME) * column(batch, "zeta_neg", s_neg, NAME)
    return squared_error(s_pos, s_neg, r_pos, r_neg)
