"""Pointwise penalty on a biased relevant document (SPEC §6.2)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from pipeline.train.losses._pairwise import column, lambda_for
from pipeline.train.losses._pointwise import squared_error

NAME = "pointwise_penalty_relevant"


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``mean((sigmoid(s + r) − y)²)`` over both documents, ``r = +λΨ·mask``, mask ``y``.

    Effect: a biased positive already counts as more relevant, so it is pushed up less.
    Paper: Seyedsalehi et al., loss-regularisation journal paper (pointwise penalty terms;
    code: shirinssalehi/LossRegularizationJournal).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['psi_pos']`` ``[batch]``; params
    ``lambda`` (overridden by ``lambda_pos``).
    """
    r_pos = lambda_for(params, "pos", NAME) * column(batch, "psi_pos", s_pos, NAME)
    r_neg = 0.0
    return squared_error(s_pos, s_neg, r_pos, r_neg)
