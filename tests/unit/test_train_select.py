"""Nested selection of the training recipe (issue 29): the inner split never reads the outer
fold's test queries, its training triples never hold its validation documents, and the
choice is the best mean over seeds."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.errors import InputError
from pipeline.params import load_params
from pipeline.train.select import (
    Tables,
    choose,
    inner_split,
    inner_tables,
    parse_grid,
    points,
    with_values,
)


def _tables() -> Tables:
    """12 queries (2 categories) in 2 outer folds; query q owns documents q-r (relevant) and
    q-n (non-relevant); outer fold f's triples pair each training query's relevant document
    with its own and with every other training query's non-relevant document."""
    qids = [str(i) for i in range(12)]
    queries = pl.DataFrame({"query_id": qids, "text": qids, "split": ["test"] * 12,
                            "category": ["a", "b"] * 6,
                            "fold": [i % 2 for i in range(12)]})  # fmt: skip
    docs = [f"{q}-{k}" for q in qids for k in ("r", "n")]
    corpus = pl.DataFrame({"doc_id": docs, "text": docs})
    qrels = pl.DataFrame({"query_id": [d.split("-")[0] for d in docs], "doc_id": docs,
                          "relevance": [int(d.endswith("r")) for d in docs]})  # fmt: skip
    rows = [(q, f"{q}-r", f"{o}-n", f)
            for f in (0, 1) for q in qids[1 - f :: 2] for o in qids[1 - f :: 2]]  # fmt: skip
    triples = pl.DataFrame(rows, schema=["query_id", "pos_doc_id", "neg_doc_id", "fold"],
                           orient="row")  # fmt: skip
    return Tables(queries, corpus, qrels, triples, pl.DataFrame(), None, ({}, {}), {})


def test_the_inner_split_holds_only_the_outer_training_queries() -> None:
    t = _tables()
    inner = inner_split(t, 0, 2, seed=13)
    assert set(inner["query_id"]) == {str(i) for i in range(1, 12, 2)}  # fold 1's queries
    assert sorted(inner.group_by("fold").len()["len"]) == [3, 3]
    with pytest.raises(InputError, match="cannot be split"):
        inner_split(t, 0, 7, seed=13)


def test_inner_triples_never_hold_the_inner_validation_documents() -> None:
    t = _tables()
    inner = inner_split(t, 0, 2, seed=13)
    corpus, triples = inner_tables(t, 0, inner)
    fold_of = dict(inner.select("query_id", "fold").iter_rows())
    assert set(corpus["doc_id"].str.split("-").list.first()) == set(fold_of)  # no test docs
    for j in (0, 1):
        part = triples.filter(pl.col("fold") == j)
        owners = {d.split("-")[0] for d in (*part["pos_doc_id"], *part["neg_doc_id"])}
        assert owners and all(fold_of[q] != j for q in owners), j
        # every allowed outer triple is kept: 3 training queries x 3 negatives
        assert part.height == 9


def test_grid_values_are_parsed_and_validated() -> None:
    grid = parse_grid(["train.lr=1e-4,2.0e-4", "model.bi_encoder.temperature=0.5"])
    assert grid == {"train.lr": [1e-4, 2e-4], "model.bi_encoder.temperature": [0.5]}
    assert points(grid) == [{"train.lr": 1e-4, "model.bi_encoder.temperature": 0.5},
                            {"train.lr": 2e-4, "model.bi_encoder.temperature": 0.5}]  # fmt: skip
    params = load_params()
    assert with_values(params, points(grid)[1]).train.lr == 2e-4
    with pytest.raises(InputError, match="cached features"):
        with_values(params, {"model.n_layers": 2})
    with pytest.raises(InputError, match=r"grid key .train\.lr.: .*expected float"):
        with_values(params, {"train.lr": "fast"})
    with pytest.raises(InputError, match="expected"):
        parse_grid(["train.lr"])


def test_the_choice_is_the_best_mean_over_seeds_ties_to_the_current_values() -> None:
    scores = pl.DataFrame({
        "outer_fold": [0] * 6 + [1] * 4,
        "train.lr": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 1.0, 1.0, 2.0, 2.0],
        "MRR@10": [0.5, 0.9, 0.8, 0.8, 0.9, 0.1, 0.7, 0.7, 0.6, 0.8],
    })  # fmt: skip
    choice = choose(scores, ["train.lr"], "MRR@10", {"train.lr": 2.0})
    assert choice["train.lr"].to_list() == [2.0, 2.0]  # fold 0: 0.8 beats 0.7 and 0.5
    assert choice["score"].to_list() == pytest.approx([0.8, 0.7])  # fold 1: a tie, current
    assert choice["is_current"].to_list() == [True, True]
    other = choose(scores, ["train.lr"], "MRR@10", {"train.lr": 3.0})
    assert other["train.lr"].to_list() == [2.0, 1.0]  # fold 1's tie: the first in order
