"""Shared pieces of the pairwise hinge losses (OpenMatch margin loss and its regularised forms).

Tensor methods only, so the loss tables import without torch (``pipeline.params`` reads them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pipeline.errors import InputError

if TYPE_CHECKING:
    from torch import Tensor


def hinge(
    s_pos: Tensor, s_neg: Tensor, a_pos: Tensor | float, a_neg: Tensor | float, margin: float
) -> Tensor:
    """``mean(max(0, m - (tanh s⁺ + a⁺) + (tanh s⁻ + a⁻)))`` (SPEC §5, §6.2)."""
    return (margin - (s_pos.tanh() + a_pos) + (s_neg.tanh() + a_neg)).relu().mean()


def lambda_for(cfg: Any, side: str) -> float:
    """λ of one side (``"pos"`` or ``"neg"``): the config's ``lambda_<side>`` where it has
    one set, else its ``lambda`` (the configs guarantee one of them)."""
    value = getattr(cfg, f"lambda_{side}", None)
    return float(cfg.lambda_ if value is None else value)


def column(batch: Mapping[str, Tensor], key: str, like: Tensor, name: str) -> Tensor:
    """``batch[key]`` with ``like``'s dtype and device; a missing key raises ``ValueError``."""
    if key not in batch:
        raise InputError(f"loss {name!r} needs batch key {key!r}; got {sorted(batch)}")
    return batch[key].to(dtype=like.dtype, device=like.device)
