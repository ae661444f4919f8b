"""Pointwise penalty on biased documents on both sides of a triple (SPEC §6.2)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from pipeline.train.losses._pairwise import column, lambda_for
from pipeline.train.losses._pointwise import squared_error

NAME = "pointwise_penalty_both"


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``mean((sigmoid(s + r) − y)²)`` over both documents, ``r = +λΨ·mask``, mask ``1``.

    Effect: biased positives are pushed up less and biased negatives down harder.
    Separate ``lambda_pos``/``lambda_neg`` as in the pairwise form.
    Paper: Seyedsalehi et al., loss-regularisation journal paper (pointwise penalty terms;
    code: shirinssalehi/LossRegularizationJournal).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['psi_pos']``, ``batch['psi_neg']``
    ``[batch]``; params ``lambda`` (overridden by ``lambda_pos`` / ``lambda_neg``).
    """
    r_pos = lambda_for(params, "pos", NAME) * column(batch, "psi_pos", s_pos, NAME)
    r_neg = lambda_for(params, "neg", NAME) * column(batch, "psi_neg", s_neg, NAME)
    return squared_error(s_pos, s_neg, r_pos, r_neg)
