"""Neutrality regulariser: a KL term towards neutral documents (SPEC §6.6), added to a
ranking loss (``loss: {margin: {}, neutrality_kl: {}}``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pipeline.config import Checked, Range
from pipeline.train.losses._pairwise import column
from pipeline.train.losses.common import Loss

if TYPE_CHECKING:
    from torch import Tensor

NAME = "neutrality_kl"


@dataclass(frozen=True)
class NeutralityConfig(Checked):
    """``coef``: the weight of the KL term in the method's loss (required, ≥ 0)."""

    coef: Annotated[float, Range(ge=0)]


def kl_to_neutrality(scores: Tensor, zeta: Tensor, mask: Tensor | None = None) -> Tensor:
    """``mean_g KL(softmax(ζ_g) ‖ softmax(scores_g))`` over groups ``[groups, size]``.

    Listwise: a group is one query's positive and negatives (``mask`` marks real entries);
    the target puts more mass on more neutral documents.
    """
    import torch

    from pipeline.train.losses._listwise import masked_log_softmax

    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    target = masked_log_softmax(zeta, mask)
    pred = masked_log_softmax(scores, mask)
    terms = torch.where(mask, target.exp() * (target - pred), torch.zeros_like(scores))
    return terms.sum(-1).mean()


def loss(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], cfg: NeutralityConfig
) -> Tensor:
    """``mean_g KL(softmax(ζ_g) ‖ softmax(s_g))`` over training groups, weighted by ``coef``
    in the method's sum (``margin + coef × KL`` for ``loss: {margin: {}, neutrality_kl: {}}``).

    Effect: within a group, score mass is pulled towards the more neutral documents (higher
    ζ); with equal ζ the target is uniform and the term pulls the scores together.
    Paper: CODER-style listwise regularisation (Zerveas et al., "Mitigating bias in search
    results through contextual document reranking and neutrality regularization", SIGIR 2022),
    over each training group {pos, neg_1, .., neg_n} (``train.group_size``; SPEC §6.6: a pair
    is not a list, with two documents softmax(ζ) is often uniform).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``batch['zeta_pos']``,
    ``batch['zeta_neg']`` ``[batch]``; ``coef`` (required, the term's weight).
    """
    from pipeline.train.losses._listwise import grouped

    scores, mask = grouped(s_pos, s_neg, batch)
    zeta, _ = grouped(
        column(batch, "zeta_pos", s_pos, NAME), column(batch, "zeta_neg", s_neg, NAME), batch, 0.0
    )
    return kl_to_neutrality(scores, zeta, mask)


RECORD = Loss(NAME, NeutralityConfig, fn=loss, needs=("zeta_pos", "zeta_neg"), weight="coef")
