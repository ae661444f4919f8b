"""EqualizeIR weak learner (SPEC §6.3): the four strategies, f_B's scores, batch tensors."""

from __future__ import annotations

import polars as pl
import pytest
import torch

from pipeline.train.batching import PairEncoder, collate
from pipeline.train.losses import get_loss
from pipeline.train.model import load_model
from pipeline.train.weak import (
    STRATEGIES,
    WeakInputs,
    biased_data,
    fewer_steps,
    less_data,
    repeat_noun_phrases,
    score_triples,
    weak_setup,
    weak_tensors,
    weaker_model,
)

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
    assert weak.n_layers == 2 and weak.triples.equals(TRIPLES) and weak.max_steps is None
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
    assert weak_setup("weaker_model", TRIPLES, QUERIES, 10, 0).n_layers == 2
    with pytest.raises(ValueError, match=r"unknown weak learner strategy 'x'; known: \['biased"):
        weak_setup("x", TRIPLES, QUERIES, 10, 0)


def test_score_triples_gives_the_models_scores_and_feeds_poe() -> None:
    tok, model = load_model("tiny-random-bert", None, seed=0)
    triples = pl.DataFrame(
        {"query_id": ["a", "a", "b"], "pos_doc_id": ["x", "x", "y"], "neg_doc_id": ["y", "z", "x"]}
    )
    queries = {"a": "nurse salary", "b": "car repair"}
    docs = {"x": "she is a nurse", "y": "he fixes cars", "z": "the weather"}
    scored = score_triples(model, tok, triples, queries, docs, max_len=32, q_len=8, device="cpu")
    assert scored.columns == ["query_id", "pos_doc_id", "neg_doc_id", "weak_pos", "weak_neg"]
    assert model.training  # scoring keeps the model's mode (and scores without dropout)
    enc = PairEncoder(tok, 32, 8).add(queries, docs, ["a", "b"], ["x", "y", "z"])
    model.eval()
    with torch.no_grad():
        direct = model(**collate([enc.pair("a", "x"), enc.pair("b", "x")], enc.pad_id))
    assert scored["weak_pos"][0] == pytest.approx(direct[0].item(), abs=1e-5)
    assert scored["weak_neg"][2] == pytest.approx(direct[1].item(), abs=1e-5)
    assert scored["weak_pos"][0] == scored["weak_pos"][1]  # one score per (query, doc)

    reordered = triples.reverse()
    tensors = weak_tensors(reordered, scored)
    assert tensors["weak_pos"].tolist() == pytest.approx(scored["weak_pos"].reverse().to_list())
    assert tensors["weak_neg"].dtype == torch.float32
    loss = get_loss("poe")(torch.zeros(3), torch.zeros(3), tensors, {"alpha": 0.1})
    assert torch.isfinite(loss)
    missing = pl.DataFrame({"query_id": ["b"], "pos_doc_id": ["z"], "neg_doc_id": ["x"]})
    with pytest.raises(ValueError, match=r"no weak learner score for query 'b', doc 'z'"):
        weak_tensors(missing, scored)
