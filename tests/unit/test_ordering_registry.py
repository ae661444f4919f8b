"""Registry-wide checks of the orderings: output contract, coverage, seeding, docstrings."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipeline import schemas
from pipeline.ordering import FILTERING, NEEDS_CANDIDATES, ORDERINGS, OrderingContext, get_ordering

N = 60


@pytest.fixture
def inputs() -> tuple[pl.DataFrame, pl.DataFrame, OrderingContext]:
    """Triples, doc scores (half the positives biased) and a context with every input."""
    rng = np.random.default_rng(0)
    triples = pl.DataFrame(
        {
            "query_id": [f"q{i % 4}" for i in range(N)],
            "pos_doc_id": [f"p{i}" for i in range(N)],
            "neg_doc_id": [f"n{i}" for i in range(N)],
        }
    )
    ids = [f"p{i}" for i in range(N)] + [f"c{i}" for i in range(8)]
    psi = np.where(np.arange(len(ids)) % 2 == 0, 0.0, rng.uniform(0.1, 2.0, len(ids)))
    scores = pl.DataFrame({"doc_id": ids, "psi_bool": np.sign(psi), "psi_tf": -psi, "psi_tc": psi})
    candidates = pl.DataFrame(
        {
            "query_id": [f"q{i % 4}" for i in range(8)],
            "doc_id": [f"c{i}" for i in range(8)],
            "rank": [1 + i // 4 for i in range(8)],
            "score": [1.0] * 8,
        }
    )
    qrels = pl.DataFrame({"query_id": ["q0"], "doc_id": ["p0"], "relevance": [1]})
    ctx = OrderingContext(psi="tf_abs", seed=5, candidates=candidates, qrels=qrels)
    return triples, scores, ctx


@pytest.mark.parametrize("name", sorted(ORDERINGS))
def test_every_ordering_meets_the_ordered_triples_contract(
    name: str, inputs: tuple[pl.DataFrame, pl.DataFrame, OrderingContext]
) -> None:
    triples, scores, ctx = inputs
    out = ORDERINGS[name](triples, scores, ctx)
    schemas.validate(out.to_arrow(), schemas.ORDERED_TRIPLES, name)
    assert out["position"].to_list() == list(range(out.height))
    assert out["pos_doc_id"].n_unique() == out.height  # no triple twice
    assert set(out["pos_doc_id"]) <= set(triples["pos_doc_id"])
    if name not in FILTERING:
        assert sorted(out["pos_doc_id"]) == sorted(triples["pos_doc_id"])
    if name not in NEEDS_CANDIDATES:
        pairs = set(zip(out["pos_doc_id"], out["neg_doc_id"], strict=True))
        assert pairs <= set(zip(triples["pos_doc_id"], triples["neg_doc_id"], strict=True))
    expected_psi = dict(zip(scores["doc_id"], scores["psi_tf"].abs(), strict=True))
    for doc, psi in zip(out["pos_doc_id"], out["psi"], strict=True):
        assert psi == pytest.approx(expected_psi[doc])


@pytest.mark.parametrize("name", sorted(ORDERINGS))
def test_every_ordering_is_seeded(
    name: str, inputs: tuple[pl.DataFrame, pl.DataFrame, OrderingContext]
) -> None:
    triples, scores, ctx = inputs
    a = ORDERINGS[name](triples, scores, ctx)
    assert a.equals(ORDERINGS[name](triples, scores, ctx))


@pytest.mark.parametrize("name", sorted(ORDERINGS))
def test_every_ordering_has_a_docstring_naming_paper_and_inputs(name: str) -> None:
    doc = ORDERINGS[name].__doc__ or ""
    assert "Paper:" in doc and "Inputs:" in doc


def test_unknown_ordering_lists_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown ordering 'x'; known: \[.*'lws'.*'shuffle'"):
        get_ordering("x")
