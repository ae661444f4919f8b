"""Neutrality KL regulariser (SPEC §6.6): value by hand, direction of its gradient, and the
method's loss ``[margin, neutrality_kl]`` as the sum ``margin + coef · KL``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from math import exp, log, tanh
from typing import Any

import polars as pl
import pytest
import torch
from torch import Tensor

from pipeline.train import loop
from pipeline.train.groups import doc_bias, prepare_groups
from pipeline.train.losses import LOSSES, make_config, score_value
from pipeline.train.losses.margin import MarginConfig
from pipeline.train.losses.neutrality_kl import NeutralityConfig
from tests.unit.loss_configs import loss
from tests.unit.tiny_rankers import DOC_SCORES, tiny_ranker


def method_loss(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], coef: float) -> Tensor:
    """The ``neutrality_kl`` method's loss: ``loss: {margin: {}, neutrality_kl: {coef}}``."""
    terms = (("margin", MarginConfig()), ("neutrality_kl", NeutralityConfig(coef)))
    value = score_value(terms, s_pos, s_neg, batch)
    assert value is not None
    return value


def softmax2(a: float, b: float) -> tuple[float, float]:
    return exp(a) / (exp(a) + exp(b)), exp(b) / (exp(a) + exp(b))


def kl(p: tuple[float, float], q: tuple[float, float]) -> float:
    return sum(pi * log(pi / qi) for pi, qi in zip(p, q, strict=True))


def test_neutrality_kl_matches_hand_formula() -> None:
    s_pos, s_neg = [0.5, -0.3], [0.2, 0.4]
    z_pos, z_neg = [0.5, 1.0], [1.0, 0.0]
    batch = {"zeta_pos": torch.tensor(z_pos), "zeta_neg": torch.tensor(z_neg)}
    value = method_loss(torch.tensor(s_pos), torch.tensor(s_neg), batch, 0.5)
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
        method_loss(sp, sn, batch, coef).backward()
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
    with_kl = method_loss(s, s, batch, 3.0)
    plain = loss("margin")(s, s, batch, {})
    assert with_kl.item() == pytest.approx(plain.item(), abs=1e-7)
    assert loss("neutrality_kl")(s, s, batch, {"coef": 3.0}).item() == pytest.approx(0, abs=1e-7)


def test_missing_coef_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"'loss neutrality_kl\.coef' is required by loss"):
        make_config("neutrality_kl", {})


def softmax(xs: list[float]) -> list[float]:
    total = sum(exp(x) for x in xs)
    return [exp(x) / total for x in xs]


def kl_list(p: list[float], q: list[float]) -> float:
    return sum(pi * log(pi / qi) for pi, qi in zip(p, q, strict=True))


# a query's group of 4 (positive first) and another query's group of 2
GROUPS = [([0.5, -0.3, 0.2, 0.9], [0.5, 1.0, 0.0, 0.8]), ([0.1, 0.4], [1.0, 0.2])]


def _hand_value(coef: float) -> float:
    """Margin part over the 4 (pos, neg) pairs + coef × mean over groups of
    KL(softmax ζ_g ‖ softmax s_g), each group's softmax over its own documents."""
    pairs = [(s[0], n) for s, _ in GROUPS for n in s[1:]]
    hinge = sum(max(0.0, 1 - tanh(p) + tanh(n)) for p, n in pairs) / len(pairs)
    kls = [kl_list(softmax(z), softmax(s)) for s, z in GROUPS]
    return hinge + coef * sum(kls) / len(kls)


def test_neutrality_kl_on_a_group_of_four_matches_hand_value() -> None:
    s_pos = torch.tensor([0.5, 0.5, 0.5, 0.1])
    s_neg = torch.tensor([-0.3, 0.2, 0.9, 0.4])
    batch = {
        "group": torch.tensor([0, 0, 0, 1]),
        "slot": torch.tensor([0, 1, 2, 0]),
        "zeta_pos": torch.tensor([0.5, 0.5, 0.5, 1.0]),
        "zeta_neg": torch.tensor([1.0, 0.0, 0.8, 0.2]),
    }
    value = method_loss(s_pos, s_neg, batch, 0.7)
    assert value.item() == pytest.approx(_hand_value(0.7), rel=1e-6)
    # the listwise term is not the mean of the pairwise ones
    pairwise = method_loss(s_pos, s_neg, {k: batch[k] for k in ("zeta_pos", "zeta_neg")}, 0.7)
    assert pairwise.item() != pytest.approx(value.item(), rel=1e-3)


def test_training_groups_reach_neutrality_kl_as_lists_of_group_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """prepare_groups(group_size 4) on triples with 3 negatives per (query, positive): each
    training group holds 4 documents, and the loss sees one list per query."""
    triples = pl.DataFrame(
        {
            "query_id": ["q0"] * 3 + ["q1"] * 3,
            "pos_doc_id": ["d0"] * 3 + ["d1"] * 3,
            "neg_doc_id": ["d2", "d5", "d6", "d7", "d2", "d4"],
        }
    )
    groups = prepare_groups(triples, 4, doc_bias(DOC_SCORES, "bool_abs"))
    assert [len(d) for d in groups.docs] == [4, 4] and groups.mask.all()
    assert groups.docs == [["d0", "d2", "d5", "d6"], ["d1", "d7", "d2", "d4"]]
    seen: list[dict[str, torch.Tensor]] = []
    record = LOSSES["neutrality_kl"]
    real = record.fn
    assert real is not None

    def spy(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], cfg: Any) -> Tensor:
        seen.append({k: v.detach().clone() for k, v in batch.items()})
        return real(s_pos, s_neg, batch, cfg)

    monkeypatch.setitem(LOSSES, "neutrality_kl", dataclasses.replace(record, fn=spy))
    cfg = loop.TrainConfig(batch_size=2, group_size=4, lr=1e-3, device="cpu", max_steps=1)
    terms = (("margin", MarginConfig()), ("neutrality_kl", NeutralityConfig(0.5)))
    loop.train_model(tiny_ranker(), groups, terms, cfg)
    (batch,) = seen
    assert set(batch) == {"group", "slot", "query", "zeta_pos", "zeta_neg"}  # what the loss needs
    assert batch["group"].tolist() == [0, 0, 0, 1, 1, 1]
    assert batch["slot"].tolist() == [0, 1, 2, 0, 1, 2]
    zeta = doc_bias(DOC_SCORES, "bool_abs")["zeta"]
    assert batch["zeta_neg"].tolist() == pytest.approx(
        [zeta[d] for ds in groups.docs for d in ds[1:]]
    )
