"""The loss record: what the params loader, the trainer and the tests know of each loss."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from torch import Tensor

LossFn: TypeAlias = "Callable[[Tensor, Tensor, Mapping[str, Tensor], Mapping[str, float]], Tensor]"
"""``loss(s_pos, s_neg, batch, params)`` → a scalar (see ``pipeline.train.losses``)."""


@dataclass(frozen=True)
class Loss:
    """One loss plug-in.

    ``name``: the ``methods.<m>.loss`` value. ``impl``: the function, or the name of the
    module in this package whose ``loss`` it is (imported on first use, for modules that
    import torch at load, so listing and checking names never does). ``config``: frozen
    dataclass of the numeric params it reads (field ``lambda_`` is params key ``lambda``).
    ``needs``: the ``[batch]`` tensors it reads besides the scores; the function's docstring
    names its paper, formula and inputs.
    """

    name: str
    impl: LossFn | str
    config: type
    needs: tuple[str, ...] = ()

    @property
    def fn(self) -> LossFn:
        """The loss function."""
        if isinstance(self.impl, str):
            module = importlib.import_module(f"{__package__}.{self.impl}")
            fn: LossFn = module.loss
            return fn
        return self.impl
