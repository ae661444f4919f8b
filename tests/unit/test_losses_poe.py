"""EqualizeIR product-of-experts loss (SPEC §6.3): value by hand, α = 0, gradient effects."""

from __future__ import annotations

from math import exp, log

import pytest
import torch

from tests.unit.loss_configs import loss


def lsm2(a: float, b: float) -> float:
    """log_softmax([a, b])[0]."""
    return a - log(exp(a) + exp(b))


def test_poe_matches_hand_formula() -> None:
    s_pos, s_neg = [0.5, -0.3], [0.2, 0.4]
    w_pos, w_neg = [2.0, -1.0], [0.0, 1.0]
    alpha = 0.1
    batch = {"weak_pos": torch.tensor(w_pos), "weak_neg": torch.tensor(w_neg)}
    value = loss("poe")(torch.tensor(s_pos), torch.tensor(s_neg), batch, {"alpha": alpha})
    total = 0.0
    for sp, sn, wp, wn in zip(s_pos, s_neg, w_pos, w_neg, strict=True):
        c_pos = alpha * lsm2(wp, wn) + lsm2(sp, sn)
        c_neg = alpha * lsm2(wn, wp) + lsm2(sn, sp)
        total += -lsm2(c_pos, c_neg)
    assert value.item() == pytest.approx(total / 2, rel=1e-6)


def test_alpha_zero_is_plain_two_way_cross_entropy() -> None:
    gen = torch.Generator().manual_seed(0)
    s_pos, s_neg, w_pos, w_neg = (torch.randn(16, generator=gen) * 3 for _ in range(4))
    batch = {"weak_pos": w_pos, "weak_neg": w_neg}
    value = loss("poe")(s_pos, s_neg, batch, {"alpha": 0.0})
    logits = torch.stack([s_pos, s_neg], dim=1)
    expected = torch.nn.functional.cross_entropy(logits, torch.zeros(16, dtype=torch.long))
    assert value.item() == pytest.approx(expected.item(), rel=1e-6)


def test_alpha_defaults_to_0_1() -> None:
    s, batch = torch.tensor([0.3]), {"weak_pos": torch.tensor([2.0]), "weak_neg": torch.zeros(1)}
    default = loss("poe")(s, -s, batch, {})
    explicit = loss("poe")(s, -s, batch, {"alpha": 0.1})
    assert default.item() == explicit.item()


def _grad_pos(weak_pos: float, weak_neg: float, alpha: float = 1.0) -> float:
    s_pos = torch.tensor([0.0], requires_grad=True)
    w = {
        "weak_pos": torch.tensor([weak_pos], requires_grad=True),
        "weak_neg": torch.tensor([weak_neg]),
    }
    loss("poe")(s_pos, torch.tensor([0.0]), w, {"alpha": alpha}).backward()
    assert w["weak_pos"].grad is None  # f_B is frozen: no gradient reaches it
    assert s_pos.grad is not None
    return s_pos.grad.item()


def test_examples_the_weak_learner_gets_right_teach_the_robust_model_less() -> None:
    confident_right = _grad_pos(3.0, 0.0)
    undecided = _grad_pos(0.0, 0.0)
    wrong = _grad_pos(0.0, 3.0)
    assert undecided == pytest.approx(-0.5, rel=1e-6)  # plain CE at equal scores: p − 1
    assert 0 > confident_right > undecided > wrong


def test_missing_weak_scores_are_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"loss 'poe' needs batch key 'weak_pos'"):
        loss("poe")(torch.zeros(1), torch.zeros(1), {"psi_pos": torch.zeros(1)}, {})


def log_softmax(xs: list[float]) -> list[float]:
    norm = log(sum(exp(x) for x in xs))
    return [x - norm for x in xs]


def test_poe_on_a_group_of_three_matches_hand_value() -> None:
    """EqualizeIR over one query's list {pos, neg_1, neg_2} and a second query's pair:
    ``−log softmax(α·log softmax(s_B) + log softmax(s_R))[pos]``, averaged over queries."""
    alpha = 0.3
    lists = [([0.5, -0.3, 0.2], [2.0, -1.0, 0.0]), ([0.1, 0.4], [-0.5, 1.5])]  # (s_R, s_B)
    expected = 0.0
    for robust, weak in lists:
        combined = [
            alpha * w + r for w, r in zip(log_softmax(weak), log_softmax(robust), strict=True)
        ]
        expected += -log_softmax(combined)[0]
    expected /= len(lists)
    batch = {
        "group": torch.tensor([0, 0, 1]),
        "slot": torch.tensor([0, 1, 0]),
        "weak_pos": torch.tensor([2.0, 2.0, -0.5]),
        "weak_neg": torch.tensor([-1.0, 0.0, 1.5]),
    }
    value = loss("poe")(
        torch.tensor([0.5, 0.5, 0.1]), torch.tensor([-0.3, 0.2, 0.4]), batch, {"alpha": alpha}
    )
    assert value.item() == pytest.approx(expected, rel=1e-6)
