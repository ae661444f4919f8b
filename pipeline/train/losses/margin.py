"""Pairwise margin loss, the base loss of the OpenMatch recipe (SPEC §5)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pipeline.config import Checked, Range
from pipeline.train.losses._pairwise import hinge
from pipeline.train.losses.common import Loss

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class MarginConfig(Checked):
    """The hinge ``margin`` (≥ 0, default 1)."""

    margin: Annotated[float, Range(ge=0)] = 1.0


def loss(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], cfg: MarginConfig) -> Tensor:
    """``mean(max(0, m - tanh(s⁺) + tanh(s⁻)))``, the unregularised base loss.

    Paper: OpenMatch (Liu et al., SIGIR 2021), the recipe of the bias-aware ranking papers.
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]``; ``margin`` (default 1).
    ``batch`` is not read.
    """
    return hinge(s_pos, s_neg, 0.0, 0.0, cfg.margin)


RECORD = Loss("margin", MarginConfig, fn=loss)
