"""Registry-wide checks of every loss term, with a batch that carries every known key and
each term's config built from example values (tests/unit/loss_configs.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from pipeline.config import ParamsError, fields
from pipeline.train.losses import LOSSES, get_record, make_config
from tests.unit.loss_configs import config

SCORE_TERMS = sorted(n for n, r in LOSSES.items() if r.fn is not None)
TRAINABLE = sorted(n for n, r in LOSSES.items() if r.term is not None)


@pytest.fixture
def batch() -> dict[str, Tensor]:
    """Every batch key any score term reads (``[8]`` floats)."""
    gen = torch.Generator().manual_seed(0)
    keys = sorted({k for n in SCORE_TERMS for k in LOSSES[n].needs})
    return {k: torch.rand(8, generator=gen) * (3.0 if k.startswith("weak") else 1.0) for k in keys}


def _scores() -> tuple[Tensor, Tensor]:
    gen = torch.Generator().manual_seed(1)
    s_pos = torch.randn(8, generator=gen).requires_grad_()
    s_neg = torch.randn(8, generator=gen).requires_grad_()
    return s_pos, s_neg


def _fn(name: str) -> Callable[..., Tensor]:
    fn = LOSSES[name].fn
    assert fn is not None
    return fn


def test_every_record_is_keyed_by_its_name_and_is_one_kind_of_term() -> None:
    assert all(r.name == name for name, r in LOSSES.items())
    assert all((r.fn is None) != (r.term is None) for r in LOSSES.values())


@pytest.mark.parametrize("name", SCORE_TERMS)
def test_every_loss_is_a_finite_scalar_with_gradients(name: str, batch: dict[str, Tensor]) -> None:
    s_pos, s_neg = _scores()
    value = _fn(name)(s_pos, s_neg, batch, config(name))
    value.backward()
    assert value.shape == () and torch.isfinite(value)
    grads = [s.grad for s in (s_pos, s_neg)]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert any(g is not None and g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("name", SCORE_TERMS)
def test_every_loss_reads_only_its_declared_batch_keys(name: str, batch: dict[str, Tensor]) -> None:
    s_pos, s_neg = _scores()
    own = {k: batch[k] for k in LOSSES[name].needs}
    cfg = config(name)
    _fn(name)(s_pos, s_neg, own, cfg)
    for key in LOSSES[name].needs:
        with pytest.raises(ValueError, match=f"needs batch key '{key}'"):
            _fn(name)(s_pos, s_neg, {k: v for k, v in own.items() if k != key}, cfg)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_config_refuses_an_unknown_key_and_names_its_required_ones(name: str) -> None:
    cls = get_record(name).config
    with pytest.raises(ParamsError, match=rf"'loss {name}\.bogus' is unknown"):
        make_config(name, {"bogus": 1})
    weight = LOSSES[name].weight
    assert weight is None or weight in fields(cls)
    assert config(name) == config(name)  # a frozen, comparable dataclass


@pytest.mark.parametrize("name", TRAINABLE)
def test_every_trainable_term_has_parameters_and_a_finite_value(name: str) -> None:
    record = get_record(name)
    assert record.term is not None
    term = record.term(8, config(name), 0)
    assert any(p.requires_grad for p in term.parameters())
    gen = torch.Generator().manual_seed(2)
    docs = {k: torch.rand(6, generator=gen) for k in record.needs}
    value = term(torch.randn(6, 8, generator=gen), docs)
    assert value.shape == () and torch.isfinite(value)


def _plain_pointwise(s_pos: Tensor, s_neg: Tensor) -> Tensor:
    return torch.cat([(torch.sigmoid(s_pos) - 1) ** 2, torch.sigmoid(s_neg) ** 2]).mean()


def _plain_ce(s_pos: Tensor, s_neg: Tensor) -> Tensor:
    return torch.nn.functional.softplus(s_neg - s_pos).mean()


def _margin(s_pos: Tensor, s_neg: Tensor) -> Tensor:
    return _fn("margin")(s_pos, s_neg, {}, config("margin"))


ZERO = {"lambda": 0.0, "alpha": 0.0}
"""The keys that switch a term's bias part off."""


@pytest.mark.parametrize(
    "name", [n for n in SCORE_TERMS if set(ZERO) & set(fields(LOSSES[n].config))]
)
def test_every_loss_reduces_to_its_base_loss_at_zero_strength(
    name: str, batch: dict[str, Tensor]
) -> None:
    s_pos, s_neg = _scores()
    zero = {k: v for k, v in ZERO.items() if k in fields(LOSSES[name].config)}
    base = (
        _plain_pointwise
        if name.startswith("pointwise_")
        else _plain_ce
        if "alpha" in zero
        else _margin
    )
    value = _fn(name)(s_pos, s_neg, batch, config(name, zero))
    assert value.item() == pytest.approx(base(s_pos, s_neg).item(), rel=1e-6)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_has_a_docstring_naming_paper_and_inputs(name: str) -> None:
    record = LOSSES[name]
    doc = (record.fn or record.term).__doc__ or ""
    assert "Paper:" in doc and "Inputs:" in doc
