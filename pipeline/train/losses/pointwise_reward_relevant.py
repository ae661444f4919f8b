"""Pointwise reward for a neutral relevant document (SPEC §6.2)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from pipeline.train.losses._pairwise import column, lambda_for
from pipeline.train.losses._pointwise import squared_error

NAME = "pointwise_reward_relevant"


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``mean((sigmoid(s + r) − y)²)`` over both documents, ``r = −λζ·mask``, mask ``y``.

    Effect: a neutral positive counts as less relevant, so it is pushed up harder.
    **Decision**: ζ as the paper says (the published code uses Ψ).
    Paper: Seyedsalehi et al., loss-regularisation journal paper (pointwise reward terms;
    code: shirinssalehi/LossRegularizationJournal).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['zeta_pos']`` ``[batch]``; params
    ``lambda`` (overridden by ``lambda_pos``).
    """
    r_pos = -lambda_for(params, "pos", NAME) * column(batch, "zeta_pos", s_pos, NAME)
    r_neg = 0.0
    return squared_error(s_pos, s_neg, r_pos, r_neg)
