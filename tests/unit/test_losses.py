"""Pairwise losses: values by hand, effect on gradients, registry-wide checks."""

from __future__ import annotations

import dataclasses
from math import tanh

import pytest
import torch

from pipeline.config import ParamsError, fields
from pipeline.train.losses import LOSSES, get_record, make_config
from pipeline.train.losses.regularised import FORMS, KINDS, SIDES
from tests.unit.loss_configs import config, loss

S_POS = [0.5, -0.3]
S_NEG = [0.2, 0.4]
BATCH = {
    "psi_pos": torch.tensor([1.0, 0.0]),
    "psi_neg": torch.tensor([0.0, 1.0]),
    "zeta_pos": torch.tensor([0.5, 1.0]),
    "zeta_neg": torch.tensor([1.0, 0.0]),
}

HAND = {
    ("margin", ()): (max(0, 1 - tanh(0.5) + tanh(0.2)) + max(0, 1 - tanh(-0.3) + tanh(0.4))) / 2,
    ("margin", (("margin", 0.5),)): (
        max(0, 0.5 - tanh(0.5) + tanh(0.2)) + max(0, 0.5 - tanh(-0.3) + tanh(0.4))
    )
    / 2,
    ("penalty_irrelevant", (("lambda", 2.0),)): (
        max(0, 1 - tanh(0.5) + (tanh(0.2) + 2 * 0.0))
        + max(0, 1 - tanh(-0.3) + (tanh(0.4) + 2 * 1.0))
    )
    / 2,
    ("penalty_relevant", (("lambda", 2.0),)): (
        max(0, 1 - (tanh(0.5) + 2 * 1.0) + tanh(0.2))  # inactive: a biased positive
        + max(0, 1 - (tanh(-0.3) + 2 * 0.0) + tanh(0.4))
    )
    / 2,
    ("penalty_both", (("lambda_pos", 0.5), ("lambda_neg", 3.0))): (
        max(0, 1 - (tanh(0.5) + 0.5 * 1.0) + (tanh(0.2) + 3.0 * 0.0))
        + max(0, 1 - (tanh(-0.3) + 0.5 * 0.0) + (tanh(0.4) + 3.0 * 1.0))
    )
    / 2,
    ("reward_irrelevant", (("lambda", 2.0),)): (
        max(0, 1 - tanh(0.5) + (tanh(0.2) - 2 * 1.0))  # inactive: a neutral negative
        + max(0, 1 - tanh(-0.3) + (tanh(0.4) - 2 * 0.0))
    )
    / 2,
    ("reward_relevant", (("lambda", 2.0),)): (
        max(0, 1 - (tanh(0.5) - 2 * 0.5) + tanh(0.2))
        + max(0, 1 - (tanh(-0.3) - 2 * 1.0) + tanh(0.4))
    )
    / 2,
    ("reward_both", (("lambda", 1.0), ("lambda_neg", 0.25))): (
        max(0, 1 - (tanh(0.5) - 1.0 * 0.5) + (tanh(0.2) - 0.25 * 1.0))
        + max(0, 1 - (tanh(-0.3) - 1.0 * 1.0) + (tanh(0.4) - 0.25 * 0.0))
    )
    / 2,
}


@pytest.mark.parametrize(
    ("name", "params", "expected"), [(n, dict(p), v) for (n, p), v in HAND.items()]
)
def test_loss_matches_hand_formula(name: str, params: dict[str, float], expected: float) -> None:
    value = loss(name)(torch.tensor(S_POS), torch.tensor(S_NEG), BATCH, params)
    assert value.shape == ()
    assert value.item() == pytest.approx(expected, rel=1e-6)


def _grad_on_pos(name: str, psi_pos: float, lam: float) -> float:
    s_pos = torch.tensor([0.5], requires_grad=True)
    batch = {k: v[:1].clone() for k, v in BATCH.items()}
    batch["psi_pos"] = torch.tensor([psi_pos])
    loss(name)(s_pos, torch.tensor([0.2]), batch, {"lambda": lam}).backward()
    assert s_pos.grad is not None
    return abs(s_pos.grad.item())


def test_penalty_relevant_gives_biased_positive_a_smaller_push() -> None:
    unbiased = _grad_on_pos("penalty_relevant", psi_pos=0.0, lam=1.0)
    biased = _grad_on_pos("penalty_relevant", psi_pos=1.0, lam=1.0)
    # unbiased: margin active, |d/ds⁺| = 1 - tanh²(0.5)
    # biased: 1 - (tanh(.5) + 1) + tanh(.2) < 0, hinge inactive
    assert unbiased == pytest.approx(1 - tanh(0.5) ** 2, rel=1e-6)
    assert biased < unbiased
    assert biased == 0.0


def test_penalty_irrelevant_raises_loss_of_biased_negative() -> None:
    s_pos, s_neg = torch.tensor([0.5]), torch.tensor([0.2])
    base = {k: v[:1].clone() for k, v in BATCH.items()}
    neutral = loss("penalty_irrelevant")(
        s_pos, s_neg, {**base, "psi_neg": torch.tensor([0.0])}, {"lambda": 0.5}
    )
    biased = loss("penalty_irrelevant")(
        s_pos, s_neg, {**base, "psi_neg": torch.tensor([1.0])}, {"lambda": 0.5}
    )
    assert biased.item() == pytest.approx(neutral.item() + 0.5, rel=1e-6)


def test_reward_relevant_pushes_neutral_positive_harder() -> None:
    # (1 - tanh .5 + tanh .2) > 0 with and without the reward: gradient equal, loss higher
    s_pos, s_neg = torch.tensor([0.5]), torch.tensor([0.2])
    base = {k: v[:1].clone() for k, v in BATCH.items()}
    fn = loss("reward_relevant")
    neutral = fn(s_pos, s_neg, {**base, "zeta_pos": torch.tensor([1.0])}, {"lambda": 1.0})
    gendered = fn(s_pos, s_neg, {**base, "zeta_pos": torch.tensor([0.0])}, {"lambda": 1.0})
    assert neutral.item() == pytest.approx(gendered.item() + 1.0, rel=1e-6)


HINGE = sorted(
    n for n, r in LOSSES.items() if r.fn is not None and "margin" in fields(r.config) and n != "poe"
)
"""The pairwise hinge family; the other losses' generic tests: test_losses_registry.py."""


@pytest.mark.parametrize("name", HINGE)
def test_every_loss_is_finite_differentiable_and_margin_at_lambda_zero(name: str) -> None:
    gen = torch.Generator().manual_seed(0)
    s_pos = torch.randn(8, generator=gen, requires_grad=True)
    s_neg = torch.randn(8, generator=gen)
    batch = {
        k: torch.rand(8, generator=gen) for k in ("psi_pos", "psi_neg", "zeta_pos", "zeta_neg")
    }
    zero = {"lambda": 0.0} if "lambda" in fields(LOSSES[name].config) else {}
    value = loss(name)(s_pos, s_neg, batch, zero)
    value.backward()
    assert value.shape == () and torch.isfinite(value)
    assert s_pos.grad is not None and torch.isfinite(s_pos.grad).all()
    expected = loss("margin")(s_pos, s_neg, batch, {})
    assert value.item() == pytest.approx(expected.item(), rel=1e-6)


def test_unknown_loss_lists_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown loss 'x'; known: \[.*'margin', .*'penalty'"):
        get_record("x")


def test_unknown_loss_suggests_the_closest_name() -> None:
    with pytest.raises(ValueError, match=r"did you mean 'penalty'\?"):
        get_record("penalti")


def test_regularised_table_is_every_form_and_kind_with_docs_a_setting() -> None:
    names = {f"{form[0]}{k}" for form in FORMS.values() for k in KINDS}
    assert len(names) == len(FORMS) * len(KINDS) and names <= set(LOSSES)
    reward = get_record("pointwise_reward")
    assert reward.needs_of(config("pointwise_reward_both")) == ("zeta_pos", "zeta_neg")
    assert get_record("penalty").needs_of(config("penalty_irrelevant")) == ("psi_neg",)
    assert get_record("penalty").needs_of(config("penalty_relevant")) == ("psi_pos",)
    assert "margin" in {f.name for f in dataclasses.fields(get_record("penalty").config)}
    assert "margin" not in {
        f.name for f in dataclasses.fields(get_record("pointwise_penalty").config)
    }
    assert set(SIDES) == {"relevant", "irrelevant", "both"}


def test_lambda_is_required_and_per_side_only_where_both_sides_are() -> None:
    with pytest.raises(ParamsError, match=r"'loss penalty\.lambda' is required"):
        make_config("penalty", {"docs": "relevant"})
    with pytest.raises(ParamsError, match=r"'loss penalty\.lambda_neg': a per-side λ needs"):
        make_config("penalty", {"docs": "relevant", "lambda": 1.0, "lambda_neg": 1.0})
    with pytest.raises(ParamsError, match=r"\.lambda' is required \(or both 'lambda_pos'"):
        make_config("reward", {"docs": "both", "lambda_pos": 1.0})
    with pytest.raises(ParamsError, match=r"'loss penalty\.docs' is required"):
        make_config("penalty", {"lambda": 1.0})
    both = config("reward_both", {"lambda_pos": 1.0, "lambda_neg": 0.0})
    assert (both.lambda_pos, both.lambda_neg) == (1.0, 0.0)


def test_missing_batch_key_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"needs batch key 'zeta_neg'"):
        loss("reward_both")(
            torch.zeros(1), torch.zeros(1), {"zeta_pos": torch.zeros(1)}, {"lambda": 1.0}
        )
