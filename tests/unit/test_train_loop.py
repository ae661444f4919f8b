"""Training loop: determinism, training curve, bias lookups and input errors."""

from __future__ import annotations

import math
from typing import Any

import polars as pl
import pytest
import torch

from pipeline.config import fields
from pipeline.models.base import Ranker
from pipeline.train.groups import doc_bias, prepare_groups
from pipeline.train.loop import TrainConfig, train_model
from pipeline.train.losses import get_record
from tests.unit.loss_configs import config, term
from tests.unit.tiny_rankers import tiny_ranker

GENDERED = ["she", "he", "her", "his", "woman", "man", "nurse", "doctor"]
QUERIES = {f"q{i}": f"question {i} about {GENDERED[i]} careers" for i in range(4)}
DOCS = {
    f"d{i}": " ".join([GENDERED[i % 8], "works", "as", "a", "doctor"] * (1 + i % 4))
    for i in range(10)
}
TRIPLES = pl.DataFrame(
    {
        "query_id": [f"q{i % 4}" for i in range(20)],
        "pos_doc_id": [f"d{i % 10}" for i in range(20)],
        "neg_doc_id": [f"d{(i * 3 + 1) % 10}" for i in range(20)],
    }
)
DOC_SCORES = pl.DataFrame(
    {
        "doc_id": list(DOCS),
        "psi_bool": [1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 1.0],
        "psi_tf": [0.7, -0.7, 0.0, 0.0, 0.0, 0.0, 1.1, -1.1, 0.0, 0.7],
        "psi_tc": [1.0, -1.0, 0.0, 0.0, 0.0, 0.0, 2.0, -2.0, 0.0, 1.0],
        "neutrality": [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 1.0, 0.0],
    }
)
CFG = TrainConfig(
    batch_size=4, group_size=2, lr=1e-3, warmup_steps=1, seed=0, log_every=2, device="cpu"
)


def ranker(arch: str = "cross_encoder", **overrides: Any) -> Ranker:
    """The tiny ranker of ``arch`` (seed 0) bound to this module's texts."""
    model = tiny_ranker(arch, **overrides)
    model.bind(QUERIES, DOCS)
    return model


def train(
    model: Ranker,
    triples: pl.DataFrame = TRIPLES,
    loss: str = "penalty_both",
    cfg: TrainConfig = CFG,
    doc_scores: pl.DataFrame = DOC_SCORES,
    extra: tuple[tuple[str, Any], ...] = (),
    **kw: Any,
) -> pl.DataFrame:
    """Train ``model`` on ``triples`` (one group per triple at group_size 2) with ``loss``
    (and the ``extra`` terms); the curve."""
    groups = prepare_groups(triples, cfg.group_size, doc_bias(doc_scores, "bool_abs"))
    return train_model(model, groups, objective(loss) + extra, cfg, **kw)


def objective(loss: str) -> tuple[tuple[str, Any], ...]:
    """A one-term method loss with λ = 0.5 where the loss takes one (``loss``: a term, or a
    paper's variant name, e.g. ``penalty_both``: ``penalty`` with ``docs: both``)."""
    name = term(loss)[0]
    lam = {"lambda": 0.5} if "lambda" in fields(get_record(name).config) else {}
    return ((name, config(loss, lam)),)


def _train(
    seed: int = 0, arch: str = "cross_encoder", **cfg: object
) -> tuple[dict[str, torch.Tensor], pl.DataFrame]:
    model = ranker(arch)
    curve = train(model, cfg=TrainConfig(**{**CFG.__dict__, "seed": seed, **cfg}))
    return model.state_dict(), curve


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["cross_encoder", "bi_encoder"])
def test_same_seed_gives_identical_weights_and_other_seed_differs(arch: str) -> None:
    first, curve1 = _train(seed=0, arch=arch)
    second, curve2 = _train(seed=0, arch=arch)
    other, _ = _train(seed=1, arch=arch)  # other dropout masks
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert curve1.equals(curve2)
    assert any(not torch.equal(first[k], other[k]) for k in first)
    untrained = ranker(arch).state_dict()
    assert any(not torch.equal(first[k], untrained[k]) for k in first)


@pytest.mark.slow
def test_curve_has_one_row_per_logged_step() -> None:
    _, curve = _train()
    # 20 triples / batch 4 = 5 steps, logged every 2 steps and at the last one
    assert curve["step"].to_list() == [2, 4, 5]
    assert curve.schema == pl.Schema({"step": pl.Int64, "loss": pl.Float64, "lr": pl.Float64})
    assert all(math.isfinite(v) and v >= 0 for v in curve["loss"])
    # warm-up 1 step to lr 1e-3, then linear decay to 0 after step 5:
    # lr(step s) = 1e-3 * (5 - (s - 1)) / 4
    assert curve["lr"].to_list() == pytest.approx([1e-3 * 4 / 4, 1e-3 * 2 / 4, 1e-3 * 1 / 4])


@pytest.mark.slow
def test_max_steps_and_epochs() -> None:
    _, curve = _train(epochs=2, max_steps=7, log_every=1)
    assert curve["step"].to_list() == list(range(1, 8))
    assert TrainConfig(batch_size=3, epochs=2).total_steps(20) == 14
    assert TrainConfig(warmup_ratio=0.1).warmup(50) == 5


@pytest.mark.slow
def test_batch_size_counts_groups() -> None:
    """40 triples, two per (query, positive): group_size 3 makes 20 groups of a positive and
    two negatives; 20 groups / batch 4 = 5 steps."""
    doubled = pl.concat([TRIPLES, TRIPLES.with_columns(neg_doc_id=pl.lit("d9"))])
    model = ranker()
    cfg = TrainConfig(**{**CFG.__dict__, "group_size": 3, "log_every": 1})
    groups = prepare_groups(doubled, 3, doc_bias(DOC_SCORES, "bool_abs"))
    assert len(groups) == 20 and {len(d) for d in groups.docs} == {3}
    curve = train_model(model, groups, objective("margin"), cfg)
    assert curve["step"].to_list() == [1, 2, 3, 4, 5]


def test_doc_bias_uses_absolute_psi_column() -> None:
    bias = doc_bias(DOC_SCORES, "tc_abs")
    assert bias["psi"]["d7"] == 2.0 and bias["psi"]["d6"] == 2.0 and bias["zeta"]["d6"] == 0.5
    assert doc_bias(DOC_SCORES, "tf_abs")["psi"]["d1"] == pytest.approx(0.7)
    with pytest.raises(
        ValueError, match=r"unknown psi 'abs'; known: \['bool_abs', 'tc_abs', 'tf_abs'\]"
    ):
        doc_bias(DOC_SCORES, "abs")


def test_missing_bias_value_is_named() -> None:
    scores = DOC_SCORES.with_columns(
        pl.when(pl.col("doc_id") == "d2")
        .then(float("nan"))
        .otherwise("neutrality")
        .alias("neutrality")
    )
    with pytest.raises(ValueError, match=r"missing/NaN psi_bool or neutrality for doc_id 'd2'"):
        doc_bias(scores, "bool_abs")


@pytest.mark.parametrize(
    ("column", "bad", "message"),
    [
        ("query_id", "q404", r"query_id 'q404' has no text in data/queries\.parquet"),
        ("neg_doc_id", "d404", r"doc_id 'd404' has no text in data/corpus\.parquet"),
    ],
)
@pytest.mark.parametrize("arch", ["cross_encoder", "bi_encoder", "late_interaction"])
def test_unknown_ids_in_triples_are_named(arch: str, column: str, bad: str, message: str) -> None:
    triples = TRIPLES.with_columns(
        pl.when(pl.int_range(pl.len()) == 3)
        .then(pl.lit(bad))
        .otherwise(pl.col(column))
        .alias(column)
    )
    scores = pl.concat([DOC_SCORES, DOC_SCORES.head(1).with_columns(doc_id=pl.lit("d404"))])
    with pytest.raises(ValueError, match=message):
        train(ranker(arch), triples, "margin", doc_scores=scores)


def test_doc_without_scores_is_named() -> None:
    scores = DOC_SCORES.filter(pl.col("doc_id") != "d4")
    with pytest.raises(ValueError, match=r"doc_id 'd4' of the triples has no row in doc_scores"):
        train(ranker(), doc_scores=scores)


def test_unknown_loss_fails_before_training() -> None:
    model = ranker()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    groups = prepare_groups(TRIPLES, 2, doc_bias(DOC_SCORES, "bool_abs"))
    with pytest.raises(ValueError, match=r"unknown loss 'hinge'"):
        train_model(model, groups, (("hinge", None),), CFG)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_no_groups_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"no training triples"):
        train(ranker(), TRIPLES.head(0))


def test_invalid_config_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"'batch_size': 0 is out of range \[1, ∞\]"):
        TrainConfig(batch_size=0)
    with pytest.raises(ValueError, match=r"'group_size': 1 is out of range \[2, ∞\]"):
        TrainConfig(group_size=1)
    with pytest.raises(ValueError, match=r"'lr': 0\.0 is out of range \(0, ∞\]"):
        TrainConfig(lr=0.0)
