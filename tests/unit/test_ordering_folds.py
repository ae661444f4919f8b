"""Orderings over k folds (`fold` column) and the Ψ⁺ profile of an order (issue 14 item 6)."""

from __future__ import annotations

import math

import polars as pl
import pytest
from scipy.stats import spearmanr

from pipeline import schemas
from pipeline.ordering import ORDERINGS, Inputs, NoConfig, apply_ordering, psi_profile
from pipeline.ordering.lws import LwsConfig

SCORES = pl.DataFrame(
    {
        "doc_id": ["r1", "b1", "b2"],
        "psi_bool": [0.0, 1.0, 1.0],
        "psi_tf": [0.0, 2.0, 1.0],
        "psi_tc": [0.0, 2.0, 1.0],
    }
)


def _triples(n: int, fold: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": ["q1"] * n,
            "pos_doc_id": [f"p{fold}-{i}" for i in range(n)],
            "neg_doc_id": [f"n{i}" for i in range(n)],
            "fold": pl.Series([fold] * n, dtype=pl.Int64),
        }
    )


def test_lws_draws_each_folds_negatives_from_that_folds_candidates() -> None:
    triples = pl.concat([_triples(6, 1), _triples(4, 0)])
    candidates = pl.DataFrame(
        {
            "query_id": ["q1", "q1"],
            "doc_id": ["b1", "b2"],
            "rank": [1, 1],
            "score": [1.0, 1.0],
            "fold": pl.Series([0, 1], dtype=pl.Int64),
        }
    )
    qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["r1"], "relevance": [1]})
    out = apply_ordering(
        ORDERINGS["lws"],
        triples,
        SCORES,
        LwsConfig(rate=1.0, top=5),
        psi="tf_abs",
        seed=3,
        tables={"train_candidates": candidates, "qrels": qrels},
    )
    schemas.validate(out.to_arrow(), schemas.ORDERED_TRIPLES, "lws")
    assert out["fold"].to_list() == [0] * 4 + [1] * 6
    assert out["position"].to_list() == [0, 1, 2, 3, 0, 1, 2, 3, 4, 5]
    assert set(out.filter(pl.col("fold") == 0)["neg_doc_id"]) == {"b1"}
    assert set(out.filter(pl.col("fold") == 1)["neg_doc_id"]) == {"b2"}


def test_without_folds_it_is_one_call_with_the_plain_seed() -> None:
    triples = _triples(20, 0).drop("fold")
    record = ORDERINGS["shuffle"]
    cfg = record.config()
    out = apply_ordering(record, triples, SCORES, cfg, psi="bool_abs", seed=7)
    assert "fold" not in out.columns
    assert out.equals(record.fn(triples, SCORES, cfg, Inputs("bool_abs", 7)))
    fold_1 = _triples(20, 0).with_columns(pl.lit(1, pl.Int64).alias("fold"))
    one_fold = apply_ordering(record, fold_1, SCORES, cfg, psi="bool_abs", seed=7)
    assert not one_fold.drop("fold").equals(out)  # seeded (7, 1), not 7


def test_a_triple_without_fold_is_an_error() -> None:
    triples = _triples(3, 0).with_columns(pl.Series("fold", [0, None, 1], dtype=pl.Int64))
    with pytest.raises(ValueError, match=r"triples: 1 rows have no fold"):
        apply_ordering(ORDERINGS["shuffle"], triples, SCORES, NoConfig(), psi="tf_abs", seed=1)


def test_ordered_triples_are_unique_per_fold_and_position() -> None:
    frame = pl.DataFrame(
        {
            "query_id": ["q"] * 3,
            "pos_doc_id": ["a", "b", "a"],
            "neg_doc_id": ["x"] * 3,
            "position": [0, 1, 0],
            "psi": [0.0] * 3,
            "fold": [0, 0, 1],
        }
    )
    schemas.validate(frame.to_arrow(), schemas.ORDERED_TRIPLES, "t")  # (fold, position) unique
    dup = frame.with_columns(pl.Series("fold", [0, 0, 0]))
    with pytest.raises(schemas.SchemaError, match=r"1 duplicate \('fold', 'position'\) keys"):
        schemas.validate(dup.to_arrow(), schemas.ORDERED_TRIPLES, "t")


def test_psi_profile_hand_values() -> None:
    ordered = pl.DataFrame({"position": [0, 1, 2, 3, 4], "psi": [0.0, 0.0, 1.0, 1.0, 2.0]})
    rho, frame = psi_profile(ordered)
    # ranks of Ψ: 1.5 1.5 3.5 3.5 5; of position 1..5: Σdxdy = 9, Σdx² = 10, Σdy² = 9
    assert rho == pytest.approx(9 / math.sqrt(90))
    assert frame["tenth"].to_list() == [0, 2, 4, 6, 8]  # ⌊10 · position / 5⌋
    assert frame["psi_mean"].to_list() == [0.0, 0.0, 1.0, 1.0, 2.0]
    assert frame["biased_share"].to_list() == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert frame["triples"].to_list() == [1] * 5


def test_psi_profile_over_folds_uses_progress_within_the_fold() -> None:
    ordered = pl.DataFrame(
        {
            "position": [0, 1, 0, 1, 2, 3],
            "psi": [0.0, 2.0, 1.0, 1.0, 0.0, 0.0],
            "fold": [0, 0, 1, 1, 1, 1],
        }
    )
    rho, frame = psi_profile(ordered)
    progress = [0.0, 0.5, 0.0, 0.25, 0.5, 0.75]
    assert rho == pytest.approx(spearmanr(progress, ordered["psi"]).statistic)
    assert frame.rows() == [
        (0, 0.5, 0.5, 2),  # tenth, psi_mean, biased_share, triples
        (2, 1.0, 1.0, 1),
        (5, 1.0, 0.5, 2),
        (7, 0.0, 0.0, 1),
    ]


def test_psi_profile_of_constant_psi_has_no_correlation() -> None:
    rho, frame = psi_profile(pl.DataFrame({"position": [0, 1, 2], "psi": [0.0, 0.0, 0.0]}))
    assert math.isnan(rho)
    assert frame["psi_mean"].to_list() == [0.0, 0.0, 0.0]
