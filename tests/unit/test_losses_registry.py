"""Registry-wide checks of every loss term, with a batch that carries every known key and
each term's config built from example values (tests/unit/loss_configs.py).

The batch is made as the trainer makes it (``prepare_groups`` + ``pair_batch`` over two
Grep-BiasIR-like queries whose relevant document comes in F, M and N versions), so every key
holds what training gives a term: Ψ, ζ, the documents' versions, which query, group and
negative each pair is of, and per-pair weak-learner scores."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import pytest
import torch
from torch import Tensor

from pipeline.config import ParamsError, fields
from pipeline.train.groups import doc_bias, pair_batch, prepare_groups
from pipeline.train.losses import LOSSES, get_record, make_config, score_value
from tests.unit.loss_configs import config

SCORE_TERMS = sorted(n for n, r in LOSSES.items() if r.fn is not None)
TRAINABLE = sorted(n for n, r in LOSSES.items() if r.term is not None)


# two queries; each relevant document in its F, M and N versions (p<q><F|M|N>), two negatives
TRIPLES = pl.DataFrame(
    [(q, f"p{q}{v}", f"n{q}{j}") for q in "ab" for v in "FMN" for j in (1, 2)],
    schema=["query_id", "pos_doc_id", "neg_doc_id"],
    orient="row",
)
DOCS = sorted({*TRIPLES["pos_doc_id"], *TRIPLES["neg_doc_id"]})
N_PAIRS = TRIPLES.height


@pytest.fixture
def batch() -> dict[str, Tensor]:
    """Every batch key any score term reads, made by the trainer's own code (``[12]``)."""
    gen = torch.Generator().manual_seed(0)
    rand = torch.rand(4, len(DOCS), generator=gen).tolist()
    scores = pl.DataFrame(
        {"doc_id": DOCS, "psi_bool": [round(x) for x in rand[0]], "psi_tf": rand[1],
         "psi_tc": rand[2], "neutrality": rand[3]}
    )  # fmt: skip
    versions = [d[2] if d[0] == "p" else "N" for d in DOCS]  # p<query><F|M|N>, negatives N
    groups = pl.DataFrame({"doc_id": DOCS, "group": versions})
    pairs = zip(TRIPLES["query_id"], TRIPLES["pos_doc_id"], TRIPLES["neg_doc_id"], strict=True)
    weak = {(q, d): 3.0 * float(torch.rand(1, generator=gen)) for q, p, n in pairs for d in (p, n)}
    made = prepare_groups(TRIPLES, 3, doc_bias(scores, "tf_abs", groups), {"weak": weak})
    idx = list(range(len(made)))
    _, _, out = pair_batch(made, idx, torch.zeros(made.mask.shape))
    assert set(out) >= {k for n in SCORE_TERMS for k in LOSSES[n].needs}, sorted(out)
    return out


def _scores(batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
    """Pair scores as the trainer gives them: the pairs of a group share their positive's."""
    gen = torch.Generator().manual_seed(1)
    per_group = torch.randn(int(batch["group"].max()) + 1, generator=gen)
    s_pos = per_group[batch["group"]].clone().requires_grad_()
    s_neg = torch.randn(N_PAIRS, generator=gen).requires_grad_()
    return s_pos, s_neg


def _reads(name: str) -> tuple[str, ...]:
    """The batch keys term ``name`` reads under its example config."""
    return LOSSES[name].needs_of(config(name))


def _fn(name: str) -> Callable[..., Tensor]:
    fn = LOSSES[name].fn
    assert fn is not None
    return fn


def test_every_record_is_keyed_by_its_name_and_is_one_kind_of_term() -> None:
    assert all(r.name == name for name, r in LOSSES.items())
    assert all((r.fn is None) != (r.term is None) for r in LOSSES.values())


@pytest.mark.parametrize("name", SCORE_TERMS)
def test_every_loss_is_a_finite_scalar_with_gradients(name: str, batch: dict[str, Tensor]) -> None:
    s_pos, s_neg = _scores(batch)
    value = _fn(name)(s_pos, s_neg, batch, config(name))
    value.backward()
    assert value.shape == () and torch.isfinite(value)
    grads = [s.grad for s in (s_pos, s_neg)]
    # a term may read only the positives (a counterfactual term): no gradient on the rest
    assert all(g is None or torch.isfinite(g).all() for g in grads)
    assert any(g is not None and g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("name", SCORE_TERMS)
def test_every_loss_reads_only_its_declared_batch_keys(name: str, batch: dict[str, Tensor]) -> None:
    s_pos, s_neg = _scores(batch)
    always = {k: batch[k] for k in ("group", "slot", "query")}  # every batch has them
    own = {**always, **{k: batch[k] for k in _reads(name)}}
    cfg = config(name)
    _fn(name)(s_pos, s_neg, own, cfg)
    assert set(_reads(name)) <= set(LOSSES[name].needs)
    for key in _reads(name):
        with pytest.raises(ValueError, match=f"needs batch key '{key}'"):
            _fn(name)(s_pos, s_neg, {k: v for k, v in own.items() if k != key}, cfg)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_config_refuses_an_unknown_key_and_names_its_required_ones(name: str) -> None:
    cls = get_record(name).config
    with pytest.raises(ParamsError, match=rf"'loss {name}\.bogus' is unknown"):
        make_config(name, {"bogus": 1})
    weight = LOSSES[name].weight
    assert weight is None or weight in fields(cls)
    scale = LOSSES[name].scale(config(name))  # reads the field of the key (`lambda_`)
    assert scale is None or scale == getattr(config(name), fields(cls)[str(weight)].name)
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


def _plain_ce(s_pos: Tensor, s_neg: Tensor, group: Tensor) -> Tensor:
    """Cross-entropy of the positive over each training group {pos, its negatives}."""
    losses = []
    for g in group.unique().tolist():
        rows = (group == g).nonzero().flatten()
        scores = torch.cat([s_pos[rows[:1]], s_neg[rows]])
        losses.append(-torch.log_softmax(scores, 0)[0])
    return torch.stack(losses).mean()


def _margin(s_pos: Tensor, s_neg: Tensor) -> Tensor:
    return _fn("margin")(s_pos, s_neg, {}, config("margin"))


ZERO = {"lambda": 0.0, "alpha": 0.0, "coef": 0.0}
"""The keys that switch a term's bias part off."""


def _strength(name: str) -> dict[str, float]:
    return {k: v for k, v in ZERO.items() if k in fields(LOSSES[name].config)}


@pytest.mark.parametrize("name", [n for n in SCORE_TERMS if _strength(n)])
def test_every_loss_reduces_to_its_base_loss_at_zero_strength(
    name: str, batch: dict[str, Tensor]
) -> None:
    """At zero strength a method ``[margin, <term>]`` trains on its base loss: a weighted
    term (``weight=`` its strength key) adds nothing to the sum, and a term that offsets the
    scores inside its own formula is its base loss (the pointwise, the listwise or the
    margin loss)."""
    s_pos, s_neg = _scores(batch)
    record, zero = LOSSES[name], _strength(name)
    if record.weight is not None and record.weight in zero:
        objective = (("margin", config("margin")), (name, config(name, zero)))
        value = score_value(objective, s_pos, s_neg, batch)
        assert value is not None and value.item() == pytest.approx(_margin(s_pos, s_neg).item())
        return
    if "alpha" in zero:
        expected = _plain_ce(s_pos, s_neg, batch["group"])
    else:
        expected = (_plain_pointwise if name.startswith("pointwise_") else _margin)(s_pos, s_neg)
    value = _fn(name)(s_pos, s_neg, batch, config(name, zero))
    assert value.item() == pytest.approx(expected.item(), rel=1e-6)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_has_a_docstring_naming_paper_and_inputs(name: str) -> None:
    record = LOSSES[name]
    doc = (record.fn or record.term).__doc__ or ""
    assert "Paper:" in doc and "Inputs:" in doc
