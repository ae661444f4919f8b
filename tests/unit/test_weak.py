"""EqualizeIR weak learner (SPEC §6.3): the four strategies, f_B's scores, batch tensors."""

from __future__ import annotations

import typing

import polars as pl
import pytest
import torch

from pipeline.train.groups import pair_batch, prepare_groups
from pipeline.train.losses.poe import Strategy
from pipeline.train.weak import (
    STRATEGIES,
    WeakInputs,
    biased_data,
    fewer_steps,
    less_data,
    repeat_noun_phrases,
    weak_pair_scores,
    weak_setup,
    weaker_model,
)
from tests.unit.loss_configs import loss as loss_fn
from tests.unit.tiny_rankers import ARCHS, tiny_ranker

TRIPLES = pl.DataFrame(
    {
        "query_id": [f"q{i % 5}" for i in range(100)],
        "pos_doc_id": [f"p{i}" for i in range(100)],
        "neg_doc_id": [f"n{i}" for i in range(100)],
    }
)
QUERIES = {f"q{i}": f"what is the average nurse salary {i}" for i in range(6)}


def test_less_data_keeps_a_seeded_fifth_in_order() -> None:
    setup = less_data(WeakInputs(TRIPLES, QUERIES, total_steps=7, seed=1))
    assert setup.strategy == "less_data" and setup.triples.height == 20
    rows = [int(p[1:]) for p in setup.triples["pos_doc_id"]]
    assert rows == sorted(rows)
    assert setup.n_layers is None and setup.max_steps is None and setup.queries is QUERIES
    assert setup.triples.equals(less_data(WeakInputs(TRIPLES, QUERIES, 7, seed=1)).triples)
    assert not setup.triples.equals(less_data(WeakInputs(TRIPLES, QUERIES, 7, seed=2)).triples)
    assert (
        less_data(WeakInputs(TRIPLES.head(2), QUERIES, 7, seed=0)).triples.height == 1
    )  # at least one


def test_weaker_model_and_fewer_steps() -> None:
    weak = weaker_model(WeakInputs(TRIPLES, QUERIES, total_steps=50, seed=0))
    assert weak.n_layers == 1 and weak.triples.equals(TRIPLES) and weak.max_steps is None
    assert weaker_model(WeakInputs(TRIPLES, QUERIES, 50, 0, n_layers=3)).n_layers == 3
    with pytest.raises(ValueError, match=r"weaker_model needs n_layers >= 1; got 0"):
        weaker_model(WeakInputs(TRIPLES, QUERIES, 50, 0, n_layers=0))
    few = fewer_steps(WeakInputs(TRIPLES, QUERIES, total_steps=50, seed=0))
    assert few.max_steps == 10 and few.triples.equals(TRIPLES) and few.n_layers is None
    assert fewer_steps(WeakInputs(TRIPLES, QUERIES, total_steps=2, seed=0)).max_steps == 1
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        fewer_steps(WeakInputs(TRIPLES, QUERIES, 50, 0, fraction=0.0))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "what is the average nurse salary",
            "what is the average nurse salary average nurse salary",
        ),
        ("nurse, doctor or surgeon?", "nurse, doctor nurse, doctor or surgeon? surgeon?"),
        ("how is it", "how is it"),
        ("", ""),
    ],
)
def test_noun_phrases_are_repeated(query: str, expected: str) -> None:
    assert repeat_noun_phrases(query) == expected


def test_biased_data_rewrites_the_training_queries() -> None:
    setup = biased_data(WeakInputs(TRIPLES, QUERIES, total_steps=5, seed=0))
    assert set(setup.queries) == {f"q{i}" for i in range(5)}
    assert setup.queries["q1"] == "what is the average nurse salary 1 average nurse salary 1"
    with pytest.raises(ValueError, match=r"query id 'q4' of the triples has no text"):
        biased_data(WeakInputs(TRIPLES, {k: v for k, v in QUERIES.items() if k != "q4"}, 5, 0))


def test_weak_setup_dispatches_and_rejects_unknown_names() -> None:
    assert sorted(STRATEGIES) == ["biased_data", "fewer_steps", "less_data", "weaker_model"]
    assert set(STRATEGIES) == set(typing.get_args(Strategy))  # the params choices are these
    assert weak_setup("weaker_model", TRIPLES, QUERIES, 10, 0).n_layers == 1
    assert weak_setup("weaker_model", TRIPLES, QUERIES, 10, 0, n_layers=4).n_layers == 4
    with pytest.raises(ValueError, match=r"unknown weak learner strategy 'x'; known: \['biased"):
        weak_setup("x", TRIPLES, QUERIES, 10, 0)


@pytest.mark.parametrize("arch", ARCHS)
def test_weak_pair_scores_are_the_models_scores_and_feed_poe(arch: str) -> None:
    f_b = tiny_ranker(arch).train()
    triples = pl.DataFrame(
        {"query_id": ["a", "a", "b"], "pos_doc_id": ["x", "x", "y"], "neg_doc_id": ["y", "z", "x"]}
    )
    f_b.bind({"a": "nurse salary", "b": "car repair"},
             {"x": "she is a nurse", "y": "he fixes cars", "z": "the weather"})  # fmt: skip
    scores = weak_pair_scores(f_b, triples, batch_size=2)
    # one score per distinct (query, document) pair, computed without dropout
    assert sorted(scores) == [("a", "x"), ("a", "y"), ("a", "z"), ("b", "x"), ("b", "y")]
    with torch.no_grad():
        direct = f_b.eval()(["a", "b"], ["x", "x"])[0]
    assert scores[("a", "x")] == pytest.approx(direct[0].item(), abs=1e-5)
    assert scores[("b", "x")] == pytest.approx(direct[1].item(), abs=1e-5)

    bias = {"psi": dict.fromkeys("xyz", 0.0), "zeta": dict.fromkeys("xyz", 1.0)}
    groups = prepare_groups(triples.reverse(), 3, bias, {"weak": scores})
    assert groups.docs == [["y", "x"], ["x", "z", "y"]] and groups.qids == ["b", "a"]
    assert groups.bias["weak"][1].tolist() == pytest.approx(
        [scores[("a", "x")], scores[("a", "z")], scores[("a", "y")]]
    )
    s_pos, s_neg, batch = pair_batch(groups, [0, 1], torch.zeros(2, 3))
    assert batch["weak_neg"].tolist() == pytest.approx(
        [scores[("b", "x")], scores[("a", "z")], scores[("a", "y")]]
    )
    loss = loss_fn("poe")(s_pos, s_neg, batch, {"alpha": 0.1})
    assert torch.isfinite(loss)
