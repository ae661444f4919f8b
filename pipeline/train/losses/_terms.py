"""Trainable loss terms: parts of a method's training loss with parameters of their own.

A term is added to the method's ranking loss at every step and its parameters train with the
ranker (optimiser, gradient clipping, checkpoints), but it is not part of the ranker: the ranker
alone is saved and reranks. AdvBERT's adversary (``pipeline.train.losses._adversary``) is one.
"""

from __future__ import annotations

from torch import Tensor, nn


class LossTerm(nn.Module):
    """Base of a trainable loss term; ``needs``: the per-document tensors (``Groups.bias``
    names, e.g. ``zeta``) that :meth:`forward` reads."""

    needs: tuple[str, ...] = ()

    def forward(self, reprs: Tensor, docs: dict[str, Tensor]) -> Tensor:
        """The term's value from the batch's document representations ``[n, d]`` (the
        family's, ``Ranker.forward``) and their ``docs`` tensors (each ``[n]``)."""
        raise NotImplementedError

