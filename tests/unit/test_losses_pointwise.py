"""Pointwise penalty/reward losses (SPEC §6.2): values by hand and effect on gradients."""

from __future__ import annotations

from math import exp

import pytest
import torch

from tests.unit.loss_configs import loss
from tests.unit.test_losses import BATCH, S_NEG, S_POS


def sig(x: float) -> float:
    return 1 / (1 + exp(-x))


def four(p1: float, p2: float, n1: float, n2: float) -> float:
    """mean((p − y)²) over the two positives (y = 1) and the two negatives (y = 0)."""
    return ((sig(p1) - 1) ** 2 + (sig(p2) - 1) ** 2 + sig(n1) ** 2 + sig(n2) ** 2) / 4


HAND = {
    # penalty r = +λΨ·mask
    ("pointwise_penalty_irrelevant", (("lambda", 2.0),)): four(0.5, -0.3, 0.2 + 0, 0.4 + 2),
    ("pointwise_penalty_relevant", (("lambda", 2.0),)): four(0.5 + 2, -0.3 + 0, 0.2, 0.4),
    ("pointwise_penalty_both", (("lambda_pos", 0.5), ("lambda_neg", 3.0))): four(
        0.5 + 0.5, -0.3 + 0, 0.2 + 0, 0.4 + 3
    ),
    # reward r = −λζ·mask
    ("pointwise_reward_irrelevant", (("lambda", 2.0),)): four(0.5, -0.3, 0.2 - 2, 0.4 - 0),
    ("pointwise_reward_relevant", (("lambda", 2.0),)): four(0.5 - 1, -0.3 - 2, 0.2, 0.4),
    ("pointwise_reward_both", (("lambda", 1.0), ("lambda_neg", 0.25))): four(
        0.5 - 0.5, -0.3 - 1.0, 0.2 - 0.25, 0.4 - 0
    ),
}


@pytest.mark.parametrize(
    ("name", "params", "expected"), [(n, dict(p), v) for (n, p), v in HAND.items()]
)
def test_pointwise_loss_matches_hand_formula(
    name: str, params: dict[str, float], expected: float
) -> None:
    value = loss(name)(torch.tensor(S_POS), torch.tensor(S_NEG), BATCH, params)
    assert value.shape == ()
    assert value.item() == pytest.approx(expected, rel=1e-6)


def _one(
    name: str, s_pos: float, s_neg: float, key: str, value: float
) -> tuple[float, float, float]:
    """(loss, dL/ds⁺, dL/ds⁻) of a one-triple batch with ``batch[key] = value``, λ = 1."""
    sp = torch.tensor([s_pos], requires_grad=True)
    sn = torch.tensor([s_neg], requires_grad=True)
    batch = {k: torch.zeros(1) for k in BATCH} | {key: torch.tensor([value])}
    value = loss(name)(sp, sn, batch, {"lambda": 1.0})
    value.backward()
    assert sp.grad is not None and sn.grad is not None
    return value.item(), sp.grad.item(), sn.grad.item()


def test_penalty_relevant_gives_a_biased_positive_a_smaller_update() -> None:
    _, g_unbiased, _ = _one("pointwise_penalty_relevant", 0.5, 0.0, "psi_pos", 0.0)
    _, g_biased, _ = _one("pointwise_penalty_relevant", 0.5, 0.0, "psi_pos", 1.0)
    # d/ds (p − 1)²/2 = (p − 1)·p(1 − p), p = sigmoid(0.5) resp. sigmoid(1.5)
    assert g_unbiased == pytest.approx((sig(0.5) - 1) * sig(0.5) * (1 - sig(0.5)), rel=1e-5)
    assert g_biased == pytest.approx((sig(1.5) - 1) * sig(1.5) * (1 - sig(1.5)), rel=1e-5)
    assert 0 > g_biased > g_unbiased  # both push up, the biased positive less


def test_penalty_irrelevant_raises_loss_and_push_down_of_a_biased_negative() -> None:
    loss_n, _, g_neutral = _one("pointwise_penalty_irrelevant", 0.0, -1.0, "psi_neg", 0.0)
    loss_b, _, g_biased = _one("pointwise_penalty_irrelevant", 0.0, -1.0, "psi_neg", 1.0)
    assert loss_b - loss_n == pytest.approx((sig(0.0) ** 2 - sig(-1.0) ** 2) / 2, rel=1e-5)
    assert g_biased > g_neutral > 0  # gradient descent lowers s⁻ more when biased


def test_reward_relevant_pushes_a_neutral_positive_harder() -> None:
    loss_g, g_gendered, _ = _one("pointwise_reward_relevant", 1.0, 0.0, "zeta_pos", 0.0)
    loss_n, g_neutral, _ = _one("pointwise_reward_relevant", 1.0, 0.0, "zeta_pos", 1.0)
    assert loss_n > loss_g
    assert g_neutral < g_gendered < 0  # larger step up for the neutral positive


def test_reward_irrelevant_pushes_a_neutral_negative_down_less() -> None:
    _, _, g_gendered = _one("pointwise_reward_irrelevant", 0.0, 0.5, "zeta_neg", 0.0)
    _, _, g_neutral = _one("pointwise_reward_irrelevant", 0.0, 0.5, "zeta_neg", 1.0)
    assert g_gendered > g_neutral > 0


@pytest.mark.parametrize("kind", ["penalty", "reward"])
def test_both_sides_use_separate_lambdas(kind: str) -> None:
    s = torch.tensor(S_POS), torch.tensor(S_NEG)
    both = loss(f"pointwise_{kind}_both")(*s, BATCH, {"lambda_pos": 0.7, "lambda_neg": 0.0})
    rel = loss(f"pointwise_{kind}_relevant")(*s, BATCH, {"lambda": 0.7})
    assert both.item() == pytest.approx(rel.item(), rel=1e-6)


def test_reward_reads_zeta_not_psi() -> None:
    with pytest.raises(ValueError, match=r"needs batch key 'zeta_pos'"):
        loss("pointwise_reward_relevant")(
            torch.zeros(1), torch.zeros(1), {"psi_pos": torch.ones(1)}, {"lambda": 1.0}
        )
