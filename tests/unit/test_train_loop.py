"""Training loop: determinism, training curve, bias lookups and input errors."""

from __future__ import annotations

import math

import polars as pl
import pytest
import torch

from pipeline.train.loop import TrainConfig, doc_bias, train_model
from pipeline.train.model import load_model

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
    batch_size=4, lr=1e-3, warmup_steps=1, max_len=32, q_len=8, seed=0, log_every=2, device="cpu"
)


def _train(
    seed: int = 0, loss: str = "penalty_both", **cfg: object
) -> tuple[dict[str, torch.Tensor], pl.DataFrame]:
    tok, model = load_model("tiny-random-bert", None, seed=0)
    config = TrainConfig(**{**CFG.__dict__, "seed": seed, **cfg})
    curve = train_model(
        model, tok, TRIPLES, QUERIES, DOCS, DOC_SCORES, loss, {"lambda": 0.5}, "bool_abs", config
    )
    return model.state_dict(), curve


def test_same_seed_gives_identical_weights_and_other_seed_differs() -> None:
    first, curve1 = _train(seed=0)
    second, curve2 = _train(seed=0)
    other, _ = _train(seed=1)
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert curve1.equals(curve2)
    assert any(not torch.equal(first[k], other[k]) for k in first)
    untrained = load_model("tiny-random-bert", None, seed=0)[1].state_dict()
    assert not torch.equal(first["head.weight"], untrained["head.weight"])


def test_curve_has_one_row_per_logged_step() -> None:
    _, curve = _train()
    # 20 triples / batch 4 = 5 steps, logged every 2 steps and at the last one
    assert curve["step"].to_list() == [2, 4, 5]
    assert curve.schema == pl.Schema({"step": pl.Int64, "loss": pl.Float64, "lr": pl.Float64})
    assert all(math.isfinite(v) and v >= 0 for v in curve["loss"])
    # warm-up 1 step to lr 1e-3, then linear decay to 0 after step 5:
    # lr(step s) = 1e-3 * (5 - (s - 1)) / 4
    assert curve["lr"].to_list() == pytest.approx([1e-3 * 4 / 4, 1e-3 * 2 / 4, 1e-3 * 1 / 4])


def test_max_steps_and_epochs() -> None:
    _, curve = _train(epochs=2, max_steps=7, log_every=1)
    assert curve["step"].to_list() == list(range(1, 8))
    assert TrainConfig(batch_size=3, epochs=2).total_steps(20) == 14
    assert TrainConfig(warmup_ratio=0.1).warmup(50) == 5


def test_doc_bias_uses_absolute_psi_column() -> None:
    psi, zeta = doc_bias(DOC_SCORES, "tc_abs")
    assert psi["d7"] == 2.0 and psi["d6"] == 2.0 and zeta["d6"] == 0.5
    assert doc_bias(DOC_SCORES, "tf_abs")[0]["d1"] == pytest.approx(0.7)
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
        ("query_id", "q404", r"query id 'q404' not found"),
        ("neg_doc_id", "d404", r"document id 'd404' not found"),
    ],
)
def test_unknown_ids_in_triples_are_named(column: str, bad: str, message: str) -> None:
    tok, model = load_model("tiny-random-bert", None, seed=0)
    triples = TRIPLES.with_columns(
        pl.when(pl.int_range(pl.len()) == 3)
        .then(pl.lit(bad))
        .otherwise(pl.col(column))
        .alias(column)
    )
    with pytest.raises(ValueError, match=message):
        train_model(model, tok, triples, QUERIES, DOCS, DOC_SCORES, "margin", {}, "bool_abs", CFG)


def test_doc_without_scores_is_named() -> None:
    tok, model = load_model("tiny-random-bert", None, seed=0)
    scores = DOC_SCORES.filter(pl.col("doc_id") != "d4")
    with pytest.raises(ValueError, match=r"doc_id 'd4' of the triples has no row in doc_scores"):
        train_model(model, tok, TRIPLES, QUERIES, DOCS, scores, "margin", {}, "bool_abs", CFG)


def test_unknown_loss_fails_before_training() -> None:
    tok, model = load_model("tiny-random-bert", None, seed=0)
    with pytest.raises(ValueError, match=r"unknown loss 'hinge'"):
        train_model(model, tok, TRIPLES, QUERIES, DOCS, DOC_SCORES, "hinge", {}, "bool_abs", CFG)


def test_invalid_config_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"need batch_size >= 1, lr > 0"):
        TrainConfig(batch_size=0, lr=0.0)
