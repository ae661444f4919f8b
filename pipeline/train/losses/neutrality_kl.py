"""Neutrality regulariser: margin loss plus a KL term towards neutral documents (SPEC §6.6)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from pipeline.train.losses._pairwise import column, hinge, margin_of

NAME = "neutrality_kl"


def kl_to_neutrality(scores: Tensor, zeta: Tensor) -> Tensor:
    """``mean_b KL(softmax(ζ_b) ‖ softmax(scores_b))`` over groups ``[batch, group]``.

    Listwise: a group is any set of one query's candidates (here ``{pos, neg}``); the target
    puts more mass on more neutral documents.
    """
    target = torch.log_softmax(zeta, dim=-1)
    return (target.exp() * (target - torch.log_softmax(scores, dim=-1))).sum(-1).mean()


def coef_of(params: Mapping[str, float]) -> float:
    """``coef`` from params; missing raises ``ValueError`` naming the loss."""
    if "coef" not in params:
        raise ValueError(f"loss {NAME!r} needs params 'coef'; got keys {sorted(params)}")
    return float(params["coef"])


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Mapping[str, float]
) -> Tensor:
    """``margin loss + coef × mean KL(softmax([ζ⁺, ζ⁻]) ‖ softmax([s⁺, s⁻]))``.

    Effect: within a triple, score mass is pulled towards the more neutral document (higher
    ζ); with equal ζ the target is uniform and the term pulls the two scores together.
    Paper: CODER-style listwise regularisation (Zerveas et al., "Mitigating bias in search
    results through contextual document reranking and neutrality regularization", SIGIR 2022),
    over the triple's group {pos, neg}.
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['zeta_pos']``,
    ``batch['zeta_neg']`` ``[batch]``; params ``coef`` (required) and ``margin`` (default 1).
    """
    zeta = torch.stack(
        [column(batch, "zeta_pos", s_pos, NAME), column(batch, "zeta_neg", s_neg, NAME)], dim=-1
    )
    scores = torch.stack([s_pos, s_neg], dim=-1)
    return hinge(s_pos, s_neg, 0.0, 0.0, margin_of(params)) + coef_of(params) * kl_to_neutrality(
        scores, zeta
    )
