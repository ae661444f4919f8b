"""Shared pieces of the pairwise hinge losses (OpenMatch margin loss and its regularised forms).

Tensor methods only, so the loss tables import without torch (``pipeline.params`` reads them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor


def hinge(
    s_pos: Tensor, s_neg: Tensor, a_pos: Tensor | float, a_neg: Tensor | float, margin: float
) -> Tensor:
    """``mean(max(0, m - (tanh s⁺ + a⁺) + (tanh s⁻ + a⁻)))`` (SPEC §5, §6.2)."""
    return (margin - (s_pos.tanh() + a_pos) + (s_neg.tanh() + a_neg)).relu().mean()


def margin_of(params: Mapping[str, float]) -> float:
    """The hinge margin ``m``: params key ``margin``, default 1."""
    return float(params.get("margin", 1.0))


def lambda_for(params: Mapping[str, float], side: str, name: str) -> float:
    """λ of one side (``"pos"`` or ``"neg"``): ``lambda_<side>`` where given, else ``lambda``.

    Neither present raises ``ValueError`` naming the loss and the keys it accepts.
    """
    value = params.get(f"lambda_{side}", params.get("lambda"))
    if value is None:
        raise ValueError(
            f"loss {name!r} needs params 'lambda' (or 'lambda_{side}'); got keys {sorted(params)}"
        )
    return float(value)


def column(batch: Mapping[str, Tensor], key: str, like: Tensor, name: str) -> Tensor:
    """``batch[key]`` with ``like``'s dtype and device; a missing key raises ``ValueError``."""
    if key not in batch:
        raise ValueError(f"loss {name!r} needs batch key {key!r}; got {sorted(batch)}")
    return batch[key].to(dtype=like.dtype, device=like.device)
