"""`neutral_only` and `biased_only`: which triples they keep, seeded order, empty results."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.ordering import ORDERINGS, Inputs
from pipeline.ordering.common import ShuffleConfig

TRIPLES = pl.DataFrame(
    {
        "query_id": ["q1", "q1", "q2", "q2", "q3"],
        "pos_doc_id": ["a", "b", "c", "d", "e"],
        "neg_doc_id": ["x", "y", "z", "x", "y"],
    }
)
SCORES = pl.DataFrame(
    {
        "doc_id": ["a", "b", "c", "d"],  # `e` unscored: Ψ = 0
        "psi_bool": [0.0, -1.0, 1.0, 0.0],
        "psi_tf": [0.0, -0.7, 0.0, 0.3],
        "psi_tc": [0.0, -1.0, 0.0, 1.0],
    }
)


@pytest.mark.parametrize(
    ("name", "psi", "kept"),
    [
        ("neutral_only", "bool_abs", ["a", "d", "e"]),
        ("biased_only", "bool_abs", ["b", "c"]),
        ("neutral_only", "tf_abs", ["a", "c", "e"]),
        ("biased_only", "tf_abs", ["b", "d"]),
    ],
)
def test_filter_keeps_exactly_the_matching_triples(name: str, psi: str, kept: list[str]) -> None:
    out = ORDERINGS[name].fn(
        TRIPLES, SCORES, ShuffleConfig(by_query=False), Inputs(psi=psi, seed=0)
    )
    assert sorted(out["pos_doc_id"]) == kept
    assert out["position"].to_list() == list(range(len(kept)))
    if name == "neutral_only":
        assert (out["psi"] == 0.0).all()
    else:
        assert (out["psi"] > 0.0).all()


def test_filters_are_seeded_shuffles() -> None:
    many = pl.DataFrame(
        {
            "query_id": ["q"] * 40,
            "pos_doc_id": [f"p{i}" for i in range(40)],
            "neg_doc_id": [f"n{i}" for i in range(40)],
        }
    )
    scores = pl.DataFrame({"doc_id": ["p0"], "psi_bool": [1.0], "psi_tf": [0.1], "psi_tc": [1.0]})
    run = ORDERINGS["neutral_only"].fn
    a = run(many, scores, ShuffleConfig(by_query=False), Inputs(seed=1))
    assert a.equals(run(many, scores, ShuffleConfig(by_query=False), Inputs(seed=1)))
    assert not a.equals(run(many, scores, ShuffleConfig(by_query=False), Inputs(seed=2)))
    assert a.height == 39


def test_nothing_left_is_a_clear_error() -> None:
    scores = SCORES.with_columns(pl.lit(0.0).alias("psi_tc"))
    with pytest.raises(
        ValueError, match=r"'biased_only' keeps none of the 5 triples \(psi='tc_abs'"
    ):
        ORDERINGS["biased_only"].fn(
            TRIPLES, scores, ShuffleConfig(by_query=False), Inputs(psi="tc_abs")
        )


@pytest.mark.parametrize("name", ["neutral_only", "biased_only"])
def test_filters_shuffle_by_query_like_the_baseline(name: str) -> None:
    """``by_query``: the kept triples with each query's triples together, as ``shuffle``
    orders the baseline's."""
    triples = pl.DataFrame(
        {
            "query_id": [f"q{i % 4}" for i in range(24)],
            "pos_doc_id": [f"p{i % 6}" for i in range(24)],
            "neg_doc_id": [f"n{i}" for i in range(24)],
        }
    )
    psi = [0.0, 1.0, 0.0, 2.0, 0.0, 0.5]
    scores = pl.DataFrame(
        {"doc_id": [f"p{i}" for i in range(6)], "psi_bool": psi, "psi_tf": psi, "psi_tc": psi}
    )
    inp = Inputs(psi="tf_abs", seed=5)
    out = ORDERINGS[name].fn(triples, scores, ShuffleConfig(by_query=True), inp)
    assert out["query_id"].rle().len() == out["query_id"].n_unique() > 1  # queries contiguous
    assert out.equals(ORDERINGS[name].fn(triples, scores, ShuffleConfig(by_query=True), inp))
    plain = ORDERINGS[name].fn(triples, scores, ShuffleConfig(by_query=False), inp)
    assert plain["query_id"].rle().len() > plain["query_id"].n_unique()  # interleaved
    assert sorted(out["neg_doc_id"]) == sorted(plain["neg_doc_id"])  # the same triples


def test_size_matched_keeps_as_many_triples_as_the_filter_at_random() -> None:
    """The control of a filter: the same number of triples (whole positives), any Ψ."""
    from pipeline.ordering import get_ordering
    from pipeline.ordering.common import Inputs
    from pipeline.ordering.size_matched import SizeMatchedConfig

    rows = [(f"q{q}", f"p{q}{p}", f"n{q}{p}{n}") for q in range(20) for p in range(3)
            for n in range(5)]  # fmt: skip
    triples = pl.DataFrame(rows, schema=["query_id", "pos_doc_id", "neg_doc_id"], orient="row")
    pos = sorted(set(triples["pos_doc_id"]))
    scores = pl.DataFrame({"doc_id": pos, "psi_tf": [float(i % 5 == 0) for i in range(len(pos))]})
    record = get_ordering("size_matched")
    for match, expected in (("neutral_only", 48 * 5), ("biased_only", 12 * 5)):
        cfg = SizeMatchedConfig(match=match)  # type: ignore[arg-type]
        out = record.fn(triples, scores, cfg, Inputs(psi="tf_abs", seed=3))
        assert out.height == expected and out["position"].to_list() == list(range(expected))
        per_pos = out.group_by("pos_doc_id").len()["len"]
        assert (per_pos == 5).all()  # whole positives
        if match == "biased_only":  # 12 random positives, not the 12 biased ones
            assert 0 < int((out["psi"] > 0).sum()) < expected
        again = record.fn(triples, scores, cfg, Inputs(psi="tf_abs", seed=3))
        assert again.equals(out)
