"""AdvBERT's adversary as a trainable loss term (SPEC §6.5): ``loss: {margin: {}, adversary:
{}}``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pipeline.config import Checked, Range
from pipeline.train.losses.common import Loss

if TYPE_CHECKING:
    from pipeline.train.losses._terms import LossTerm


@dataclass(frozen=True)
class AdversaryConfig(Checked):
    """``adv_weight``: the weight of the adversary's cross-entropy in the method's loss."""

    adv_weight: Annotated[float, Range(ge=0)]


def term(repr_dim: int, cfg: AdversaryConfig, seed: int) -> LossTerm:
    """``CE(head(GRL(r_d)), 1[ζ(d) < 1])`` over the representation ``r_d`` of every document
    of the batch, weighted by ``adv_weight`` in the method's sum.

    Effect: the head learns to read the protected label from the document representation;
    the gradient-reversal layer makes the encoder remove what the head can read.
    Paper: Rekabsaz, Kopeinik & Schedl, "Societal Biases in Retrieved Contents: Measurement
    Framework and Adversarial Mitigation for BERT Rankers", SIGIR 2021 (AdvBERT).
    Inputs: the family's document representations ``[n, repr_dim]`` (``Ranker.forward``), the
    documents' ζ; ``adv_weight``. The head is seeded with ``seed`` and is not saved.
    """
    from pipeline.train.losses._adversary import AdversaryTerm

    return AdversaryTerm(repr_dim, seed)


RECORD = Loss("adversary", AdversaryConfig, term=term, needs=("zeta",), weight="adv_weight")
