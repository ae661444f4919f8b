"""Neutrality KL regulariser (SPEC §6.6): value by hand, direction of its gradient."""

from __future__ import annotations

from math import exp, log, tanh

import pytest
import torch

from pipeline.train.losses import get_loss


def softmax2(a: float, b: float) -> tuple[float, float]:
    return exp(a) / (exp(a) + exp(b)), exp(b) / (exp(a) + exp(b))


def kl(p: tuple[float, float], q: tuple[float, float]) -> float:
    return sum(pi * log(pi / qi) for pi, qi in zip(p, q, strict=True))


def test_neutrality_kl_matches_hand_formula() -> None:
    s_pos, s_neg = [0.5, -0.3], [0.2, 0.4]
    z_pos, z_neg = [0.5, 1.0], [1.0, 0.0]
    batch = {"zeta_pos": torch.tensor(z_pos), "zeta_neg": torch.tensor(z_neg)}
    value = get_loss("neutrality_kl")(
        torch.tensor(s_pos), torch.tensor(s_neg), batch, {"coef": 0.5}
    )
    hinge = sum(max(0, 1 - tanh(p) + tanh(n)) for p, n in zip(s_pos, s_neg, strict=True)) / 2
    kls = [
        kl(softmax2(zp, zn), softmax2(sp, sn))
        for sp, sn, zp, zn in zip(s_pos, s_neg, z_pos, z_neg, strict=True)
    ]
    assert value.item() == pytest.approx(hinge + 0.5 * sum(kls) / 2, rel=1e-6)


def test_neutrality_term_pulls_score_mass_to_the_neutral_document() -> None:
    # equal scores, biased positive (ζ=0) and neutral negative (ζ=1)
    def grads(coef: float) -> tuple[float, float]:
        sp = torch.tensor([0.3], requires_grad=True)
        sn = torch.tensor([0.3], requires_grad=True)
        batch = {"zeta_pos": torch.tensor([0.0]), "zeta_neg": torch.tensor([1.0])}
        get_loss("neutrality_kl")(sp, sn, batch, {"coef": coef}).backward()
        assert sp.grad is not None and sn.grad is not None
        return sp.grad.item(), sn.grad.item()

    base_pos, base_neg = grads(0.0)
    reg_pos, reg_neg = grads(2.0)
    p_neg = softmax2(0.0, 1.0)[1]
    # d KL / d s = softmax(s) − softmax(ζ) = 0.5 − P
    assert reg_neg - base_neg == pytest.approx(2.0 * (0.5 - p_neg), rel=1e-5)
    assert reg_pos - base_pos == pytest.approx(2.0 * (p_neg - 0.5), rel=1e-5)
    assert reg_neg < base_neg  # the neutral document is pushed up


def test_equal_neutrality_and_equal_scores_add_nothing() -> None:
    batch = {"zeta_pos": torch.tensor([0.7]), "zeta_neg": torch.tensor([0.7])}
    s = torch.tensor([0.1])
    with_kl = get_loss("neutrality_kl")(s, s, batch, {"coef": 3.0})
    plain = get_loss("margin")(s, s, batch, {})
    assert with_kl.item() == pytest.approx(plain.item(), abs=1e-7)


def test_missing_coef_is_a_clear_error() -> None:
    batch = {"zeta_pos": torch.ones(1), "zeta_neg": torch.ones(1)}
    with pytest.raises(ValueError, match=r"loss 'neutrality_kl' needs params 'coef'"):
        get_loss("neutrality_kl")(torch.zeros(1), torch.zeros(1), batch, {"lambda": 1.0})
