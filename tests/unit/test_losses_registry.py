"""Registry-wide checks of every loss, with a batch that carries every known key."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from pipeline.train.losses import LOSSES

ALL_PARAMS = {"lambda": 0.5, "coef": 0.5, "alpha": 0.1, "margin": 1.0}


@pytest.fixture
def batch() -> dict[str, Tensor]:
    """Every batch key any loss reads (``[8]`` floats)."""
    gen = torch.Generator().manual_seed(0)
    keys = sorted({k for r in LOSSES.values() for k in r.needs})
    return {k: torch.rand(8, generator=gen) * (3.0 if k.startswith("weak") else 1.0) for k in keys}


def _scores() -> tuple[Tensor, Tensor]:
    gen = torch.Generator().manual_seed(1)
    s_pos = torch.randn(8, generator=gen).requires_grad_()
    s_neg = torch.randn(8, generator=gen).requires_grad_()
    return s_pos, s_neg


def test_every_record_is_keyed_by_its_name() -> None:
    assert all(r.name == name for name, r in LOSSES.items())


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_is_a_finite_scalar_with_gradients(name: str, batch: dict[str, Tensor]) -> None:
    s_pos, s_neg = _scores()
    value = LOSSES[name].fn(s_pos, s_neg, batch, ALL_PARAMS)
    value.backward()
    assert value.shape == () and torch.isfinite(value)
    grads = [s.grad for s in (s_pos, s_neg)]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert any(g is not None and g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_reads_only_its_declared_batch_keys(name: str, batch: dict[str, Tensor]) -> None:
    s_pos, s_neg = _scores()
    own = {k: batch[k] for k in LOSSES[name].needs}
    LOSSES[name].fn(s_pos, s_neg, own, ALL_PARAMS)
    for key in LOSSES[name].needs:
        with pytest.raises(ValueError, match=f"needs batch key '{key}'"):
            LOSSES[name].fn(s_pos, s_neg, {k: v for k, v in own.items() if k != key}, ALL_PARAMS)


def _plain_pointwise(s_pos: Tensor, s_neg: Tensor) -> Tensor:
    return torch.cat([(torch.sigmoid(s_pos) - 1) ** 2, torch.sigmoid(s_neg) ** 2]).mean()


def _plain_ce(s_pos: Tensor, s_neg: Tensor) -> Tensor:
    return torch.nn.functional.softplus(s_neg - s_pos).mean()


def _base(name: str) -> tuple[dict[str, float], Callable[[Tensor, Tensor], Tensor]]:
    """Params that switch the method's bias term off, and the loss it then equals."""
    if name.startswith("pointwise_"):
        return {"lambda": 0.0}, _plain_pointwise
    if name == "poe":
        return {"alpha": 0.0}, _plain_ce
    margin = LOSSES["margin"].fn
    return {"lambda": 0.0, "coef": 0.0}, lambda sp, sn: margin(sp, sn, {}, {})


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_reduces_to_its_base_loss_at_zero_strength(
    name: str, batch: dict[str, Tensor]
) -> None:
    s_pos, s_neg = _scores()
    params, base = _base(name)
    value = LOSSES[name].fn(s_pos, s_neg, batch, params)
    assert value.item() == pytest.approx(base(s_pos, s_neg).item(), rel=1e-6)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_has_a_docstring_naming_paper_and_inputs(name: str) -> None:
    doc = LOSSES[name].fn.__doc__ or ""
    assert "Paper:" in doc and "Inputs:" in doc
