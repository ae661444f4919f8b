"""AdvBERT adversary (SPEC §6.5): gradient reversal, labels, loss value, encoder integration."""

from __future__ import annotations

from math import exp, log, tanh
from typing import Any

import pytest
import torch

from pipeline.train.losses import get_record
from pipeline.train.losses._adversary import (
    AdversaryHead,
    AdversaryTerm,
    adversarial_loss,
    adversary_accuracy,
    grad_reverse,
    protected_labels,
)
from pipeline.train.losses.adversary import AdversaryConfig
from tests.unit.tiny_rankers import ARCHS, tiny_ranker


def test_grad_reverse_is_identity_forward_and_negates_backward() -> None:
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = grad_reverse(x, scale=0.5)
    assert torch.equal(y, x)
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad is not None
    assert x.grad.tolist() == [-0.5, -1.0, -1.5]


def test_protected_label_is_one_below_full_neutrality() -> None:
    zeta = torch.tensor([1.0, 0.999, 0.0, 0.667, 1.0])
    assert protected_labels(zeta).tolist() == [0, 1, 1, 1, 0]


def _identity_head() -> AdversaryHead:
    head = AdversaryHead(2)
    with torch.no_grad():
        head.hidden.weight.copy_(torch.eye(2))
        head.out.weight.copy_(torch.eye(2))
    return head


def test_adversarial_loss_matches_hand_formula() -> None:
    # identity layers: logits = tanh(cls); labels: ζ⁺ = [1, 0.5] → [0, 1]; ζ⁻ = [0, 1] → [1, 0]
    cls_pos = torch.tensor([[0.2, -0.1], [1.0, 0.5]])
    cls_neg = torch.tensor([[-0.3, 0.4], [0.0, 2.0]])
    zeta_pos, zeta_neg = torch.tensor([1.0, 0.5]), torch.tensor([0.0, 1.0])
    value = adversarial_loss(cls_pos, cls_neg, zeta_pos, zeta_neg, _identity_head(), weight=0.3)

    def ce(v: list[float], label: int) -> float:
        a, b = tanh(v[0]), tanh(v[1])
        return -([a, b][label] - log(exp(a) + exp(b)))

    rows = [([0.2, -0.1], 0), ([1.0, 0.5], 1), ([-0.3, 0.4], 1), ([0.0, 2.0], 0)]
    assert value.item() == pytest.approx(0.3 * sum(ce(v, y) for v, y in rows) / 4, rel=1e-6)


def _grads(reverse: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    cls_pos = torch.randn(4, 8, generator=gen).requires_grad_()
    cls_neg = torch.randn(4, 8, generator=gen)
    head = AdversaryHead(8, seed=1, init_std=0.5)
    zeta_pos, zeta_neg = torch.tensor([1.0, 0.2, 0.0, 1.0]), torch.tensor([0.5, 1.0, 1.0, 0.0])
    loss = adversarial_loss(cls_pos, cls_neg, zeta_pos, zeta_neg, head, 2.0, reverse=reverse)
    loss.backward()
    assert cls_pos.grad is not None
    return cls_pos.grad, [p.grad for p in head.parameters() if p.grad is not None]


def test_grl_flips_the_adversary_gradient_into_the_encoder_only() -> None:
    cls_with, head_with = _grads(reverse=True)
    cls_without, head_without = _grads(reverse=False)
    assert cls_with.abs().sum() > 0
    assert torch.equal(cls_with, -cls_without)  # exactly negated on the CLS input
    assert len(head_with) == 4
    for a, b in zip(head_with, head_without, strict=True):
        assert torch.equal(a, b)  # the head itself still descends on its cross-entropy


def test_head_runs_in_float32_under_bf16() -> None:
    head = AdversaryHead(4)
    logits = head(torch.ones(3, 4, dtype=torch.bfloat16))
    assert logits.dtype == torch.float32 and logits.shape == (3, 2)
    assert adversary_accuracy(torch.ones(3, 4), torch.tensor([1.0, 1.0, 0.0]), head) in (
        pytest.approx(2 / 3),
        pytest.approx(1 / 3),
    )


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_adversary_reads_each_familys_document_representation(arch: str) -> None:
    """The adversary's reversed gradient reaches the encoder through the family's document
    representation ([CLS] of the pair, pooled document, mean document token), and the head."""
    model = tiny_ranker(arch).eval()  # no dropout: both passes see the same network
    head = AdversaryHead(model.repr_dim, seed=0)
    params = [*model.parameters(), *head.parameters()]

    def encoder_grad(reverse: bool) -> torch.Tensor:
        for p in params:
            p.grad = None
        _, reprs = model(["q0", "q0"], ["d0", "d5"])
        assert reprs.shape == (2, model.repr_dim)
        loss = adversarial_loss(
            reprs[:1], reprs[1:], torch.tensor([0.0]), torch.tensor([1.0]), head, 1.0, reverse
        )
        loss.backward()
        base: Any = model.encoder.base_model
        grad = base.embeddings.word_embeddings.weight.grad
        assert grad is not None and all(p.grad is not None for p in head.parameters())
        return grad.clone()

    with_grl, without = encoder_grad(True), encoder_grad(False)
    assert with_grl.abs().sum() > 0
    assert torch.allclose(with_grl, -without)


def test_adversary_term_is_the_adversarial_loss_over_every_document() -> None:
    term = AdversaryTerm(3, seed=1)
    assert term.needs == ("zeta",)
    reprs = torch.tensor([[0.1, 0.2, -0.3], [1.0, 0.0, 0.5], [-0.2, 0.4, 0.9]])
    zeta = torch.tensor([1.0, 0.5, 0.0])
    expected = adversarial_loss(reprs, reprs[:0], zeta, zeta[:0], term.head, 1.0)
    assert torch.equal(term(reprs, {"zeta": zeta}), expected)
    record = get_record("adversary")  # the method's sum scales it by adv_weight
    assert record.weight == "adv_weight" and record.scale(AdversaryConfig(0.7)) == 0.7
