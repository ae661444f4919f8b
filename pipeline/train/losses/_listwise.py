"""Listwise view of a batch of pairs: one row per training group ``[pos, neg_1, .., neg_n]``.

The trainer flattens each group (``pipeline.train.groups``) into its ``(pos, neg)`` pairs and
adds ``batch['group']`` (which group) and ``batch['slot']`` (which negative). Without them
every pair is its own group of two.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor


def grouped(
    s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], fill: float = float("-inf")
) -> tuple[Tensor, Tensor]:
    """``(table [groups, 1 + max negatives], mask)``: column 0 the positive's value, then the
    negatives'; missing entries hold ``fill`` and are False in ``mask``."""
    n = s_pos.shape[0]
    g = batch.get("group", torch.arange(n)).to(s_pos.device)
    j = batch.get("slot", torch.zeros(n, dtype=torch.long)).to(s_pos.device)
    rows, cols = int(g.max()) + 1 if n else 0, int(j.max()) + 2 if n else 2
    table = torch.full((rows, cols), fill, dtype=s_pos.dtype, device=s_pos.device)
    mask = torch.zeros((rows, cols), dtype=torch.bool, device=s_pos.device)
    table = table.index_put((g, torch.zeros_like(g)), s_pos)
    table = table.index_put((g, j + 1), s_neg)
    mask[g, 0] = True
    mask[g, j + 1] = True
    return table, mask


def masked_log_softmax(x: Tensor, mask: Tensor) -> Tensor:
    """``log_softmax`` over the real entries of each row; padded entries get ``-inf``."""
    return torch.log_softmax(x.masked_fill(~mask, float("-inf")), dim=-1)
