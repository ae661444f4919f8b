"""Neutrality regulariser: margin loss plus a KL term towards neutral documents (SPEC §6.6)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from pipeline.train.losses._listwise import grouped, masked_log_softmax
from pipeline.train.losses._pairwise import column, hinge, margin_of

NAME = "neutrality_kl"


def kl_to_neutrality(scores: Tensor, zeta: Tensor, mask: Tensor | None = None) -> Tensor:
    """``mean_g KL(softmax(ζ_g) ‖ softmax(scores_g))`` over groups ``[groups, size]``.

    Listwise: a group is one query's positive and negatives (``mask`` marks real entries);
    the target puts more mass on more neutral documents.
    """
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    target = masked_log_softmax(zeta, mask)
    pred = masked_log_softmax(scores, mask)
    terms = torch.where(mask, target.exp() * (target - pred), torch.zeros_like(scores))
    return terms.sum(-1).mean()


def coef_of(params: Mapping[str, float]) -> float:
    """``coef`` from params; missing raises ``ValueError`` naming the loss."""
    if "coef" not in params:
        raise ValueError(f"loss {NAME!r} needs params 'coef'; got keys {sorted(params)}")
    return float(params["coef"])


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``margin loss + coef × mean_g KL(softmax(ζ_g) ‖ softmax(s_g))`` over training groups.

    Effect: within a triple, score mass is pulled towards the more neutral document (higher
    ζ); with equal ζ the target is uniform and the term pulls the two scores together.
    Paper: CODER-style listwise regularisation (Zerveas et al., "Mitigating bias in search
    results through contextual document reranking and neutrality regularization", SIGIR 2022),
    over each training group {pos, neg_1, .., neg_n} (``train.group_size``; SPEC §6.6: a pair
    is not a list, with two documents softmax(ζ) is often uniform).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['zeta_pos']``,
    ``batch['zeta_neg']`` ``[batch]``; params ``coef`` (required) and ``margin`` (default 1).
    """
    scores, mask = grouped(s_pos, s_neg, batch)
    zeta, _ = grouped(
        column(batch, "zeta_pos", s_pos, NAME), column(batch, "zeta_neg", s_neg, NAME), batch, 0.0
    )
    kl = kl_to_neutrality(scores, zeta, mask)
    return hinge(s_pos, s_neg, 0.0, 0.0, margin_of(params)) + coef_of(params) * kl
