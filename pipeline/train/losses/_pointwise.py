"""Shared piece of the pointwise losses (regularisation paper, SPEC §6.2)."""

from __future__ import annotations

import torch
from torch import Tensor


def squared_error(
    s_pos: Tensor, s_neg: Tensor, r_pos: Tensor | float, r_neg: Tensor | float
) -> Tensor:
    """``mean((p − y)²)`` over both documents of each triple, ``p = sigmoid(s + r)``.

    The positive has label ``y = 1`` and offset ``r_pos``, the negative ``y = 0`` and
    ``r_neg``; the mean runs over all ``2 × batch`` documents.
    """
    p_pos = torch.sigmoid(s_pos + r_pos)
    p_neg = torch.sigmoid(s_neg + r_neg)
    return torch.cat([(p_pos - 1.0) ** 2, p_neg**2]).mean()
