"""AdvBERT adversary: a gradient-reversal layer and a protected-attribute head (SPEC §6.5).

Paper: Rekabsaz, Kopeinik & Schedl, "Societal Biases in Retrieved Contents: Measurement
Framework and Adversarial Mitigation for BERT Rankers", SIGIR 2021 (AdvBERT).
Inputs: each document's representation from the ranker's family (``Ranker.forward``: the
cross-encoder's [CLS], the bi-encoder's pooled document vector, …; SPEC §5.1), its
neutrality ζ, an :class:`AdversaryHead` and ``adv_weight``. :class:`AdversaryTerm` is the
loss term the trainer adds to a method's ranking loss (``train_model(..., terms=[...])``);
the ranker itself never carries the head.

The head learns to predict the protected label ``1 if ζ(d) < 1 else 0`` from [CLS]; the
gradient-reversal layer between encoder and head flips the sign of the adversary's gradient
into the encoder, so the encoder learns to remove what the head can read, while the head's
own parameters still descend on its cross-entropy. Total loss = ranking loss +
``adv_weight`` × adversary cross-entropy.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from pipeline.progress import record
from pipeline.train.losses._terms import LossTerm


class GradReverse(torch.autograd.Function):
    """Identity forward; backward multiplies the incoming gradient by ``−scale``."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, scale: float) -> Tensor:
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        return -ctx.scale * grad, None


def grad_reverse(x: Tensor, scale: float = 1.0) -> Tensor:
    """``x`` unchanged, with its gradient negated (and scaled) on the way back."""
    out: Tensor = GradReverse.apply(x, scale)
    return out


class AdversaryHead(nn.Module):
    """``Linear(hidden, hidden) → tanh → Linear(hidden, 2)``: logits of the protected label.

    Runs in float32 (also under bf16 autocast), like the ranker's score head.
    """

    def __init__(self, hidden_size: int, seed: int = 0, init_std: float = 0.02) -> None:
        super().__init__()
        self.hidden = nn.Linear(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, 2)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for layer in (self.hidden, self.out):
                layer.weight.normal_(0.0, init_std, generator=generator)
                layer.bias.zero_()

    def forward(self, cls: Tensor) -> Tensor:
        """Logits ``[batch, 2]`` from [CLS] vectors ``[batch, hidden]``."""
        with torch.autocast(device_type=cls.device.type, enabled=False):
            logits: Tensor = self.out(torch.tanh(self.hidden(cls.float())))
        return logits


def protected_labels(zeta: Tensor) -> Tensor:
    """``1`` where ζ < 1 (the document carries gendered words unevenly), else ``0`` (int64)."""
    return (zeta < 1.0).long()


def adversary_ce(cls: Tensor, zeta: Tensor, head: AdversaryHead, reverse: bool = True) -> Tensor:
    """``CE(head(GRL(cls)), label(ζ))`` over the documents' vectors ``cls`` ``[n, h]``."""
    if reverse:
        cls = grad_reverse(cls)
    labels = protected_labels(zeta.to(cls.device))
    logits = head(cls)
    return nn.functional.cross_entropy(logits, labels)


def adversarial_loss(
    cls_pos: Tensor,
    cls_neg: Tensor,
    zeta_pos: Tensor,
    zeta_neg: Tensor,
    head: AdversaryHead,
    weight: float,
    reverse: bool = True,
) -> Tensor:
    """``weight × CE(head(GRL([cls⁺; cls⁻])), [label(ζ⁺); label(ζ⁻)])`` over both documents.

    ``reverse=False`` drops the gradient-reversal layer (for tests and diagnostics only).
    Add the result to the ranking loss; the head's parameters must be in the optimiser.
    """
    cls = torch.cat([cls_pos, cls_neg])
    return weight * adversary_ce(cls, torch.cat([zeta_pos, zeta_neg]), head, reverse)


def adversary_accuracy(cls: Tensor, zeta: Tensor, head: AdversaryHead) -> float:
    """Share of documents whose protected label the head predicts (a training diagnostic)."""
    with torch.no_grad():
        pred = head(cls).argmax(dim=-1)
        return float((pred == protected_labels(zeta.to(pred.device))).float().mean())


class AdversaryTerm(LossTerm):
    """AdvBERT's loss term: ``CE(head(GRL(r_d)), 1[ζ(d) < 1])`` over the representation
    ``r_d`` of every document of the batch (:func:`adversary_ce`); the trainer scales it by
    the method's ``adv_weight`` (the ``adversary`` record of ``pipeline.train.losses``).

    A trainable term: the trainer puts its head in the optimiser, the gradient clipping and
    the checkpoints beside the ranker, and drops it after training (the ranker alone is
    saved and reranks). ``needs``: the per-document tensors it reads (``Groups.bias``).
    """

    needs: tuple[str, ...] = ("zeta",)

    def __init__(self, repr_dim: int, seed: int = 0) -> None:
        super().__init__()
        self.head = AdversaryHead(repr_dim, seed=seed)

    def forward(self, reprs: Tensor, docs: dict[str, Tensor]) -> Tensor:
        """The term's value from document representations ``[n, d]`` and their ``docs``
        tensors (``zeta`` ``[n]``)."""
        zeta = docs["zeta"]
        # issues 21, 29: does the adversary learn, and does the ranker hide the label from it?
        # Logged (DVCLive, pipeline.train.live.record): the head's accuracy on the batch's
        # documents before this step's update, the batch's majority-label share (what
        # knowing each batch's majority would score) and its share of label 1 (from which
        # pipeline/report/adversary.py derives the best constant guess over a period).
        share = float(protected_labels(zeta).float().mean())
        record("adv_acc", adversary_accuracy(reprs.detach().float(), zeta, self.head))
        record("adv_majority", max(share, 1.0 - share))
        record("adv_label_share", share)
        return adversary_ce(reprs.float(), zeta, self.head)
