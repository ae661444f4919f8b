"""Registry-wide checks of the orderings: records, output contract, coverage, seeding, folds."""

from __future__ import annotations

import dataclasses
import pkgutil
import typing

import numpy as np
import polars as pl
import pytest

from pipeline import ordering, schemas
from pipeline.ordering import ORDERINGS, Inputs, apply_ordering, get_ordering
from pipeline.schemas import PsiColumn

N = 60


@pytest.fixture
def inputs() -> tuple[pl.DataFrame, pl.DataFrame, Inputs]:
    """Triples, doc scores (half the positives biased) and inputs with every table."""
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
    tables = {"train_candidates": candidates, "qrels": qrels}
    return triples, scores, Inputs(psi="tf_abs", seed=5, tables=tables)


def _run(name: str, triples: pl.DataFrame, scores: pl.DataFrame, inp: Inputs) -> pl.DataFrame:
    record = ORDERINGS[name]
    cfg = record.config(psi="tf_abs") if name == "curriculum" else record.config()
    return record.fn(triples, scores, cfg, inp)


def test_registry_holds_one_record_per_module() -> None:
    modules = {m.name for m in pkgutil.iter_modules(ordering.__path__)}
    assert set(ORDERINGS) == {m for m in modules if not m.startswith("_")} - ordering.HELPERS
    for name, record in ORDERINGS.items():
        assert record.name == name
        assert dataclasses.is_dataclass(record.config)
        assert set(record.needs) <= {"train_candidates", "qrels"}  # the order stage's TABLES
    assert ORDERINGS["lws"].needs == ("train_candidates", "qrels")
    assert ORDERINGS["curriculum"].method_keys == ("direction",)


def test_psi_column_choices_match_the_schema() -> None:
    assert set(typing.get_args(PsiColumn)) == set(schemas.PSI_SOURCE)


@pytest.mark.parametrize("name", sorted(ORDERINGS))
def test_every_ordering_meets_the_ordered_triples_contract(
    name: str, inputs: tuple[pl.DataFrame, pl.DataFrame, Inputs]
) -> None:
    triples, scores, inp = inputs
    out = _run(name, triples, scores, inp)
    schemas.validate(out.to_arrow(), schemas.ORDERED_TRIPLES, name)
    assert out["position"].to_list() == list(range(out.height))
    assert out["pos_doc_id"].n_unique() == out.height  # no triple twice
    assert set(out["pos_doc_id"]) <= set(triples["pos_doc_id"])
    if not ORDERINGS[name].filters:
        assert sorted(out["pos_doc_id"]) == sorted(triples["pos_doc_id"])
    if not ORDERINGS[name].replaces_negatives:
        pairs = set(zip(out["pos_doc_id"], out["neg_doc_id"], strict=True))
        assert pairs <= set(zip(triples["pos_doc_id"], triples["neg_doc_id"], strict=True))
    expected_psi = dict(zip(scores["doc_id"], scores["psi_tf"].abs(), strict=True))
    for doc, psi in zip(out["pos_doc_id"], out["psi"], strict=True):
        assert psi == pytest.approx(expected_psi[doc])


@pytest.mark.parametrize("name", sorted(ORDERINGS))
def test_every_ordering_is_seeded(
    name: str, inputs: tuple[pl.DataFrame, pl.DataFrame, Inputs]
) -> None:
    triples, scores, inp = inputs
    a = _run(name, triples, scores, inp)
    assert a.equals(_run(name, triples, scores, inp))


@pytest.mark.parametrize("name", sorted(ORDERINGS))
def test_every_ordering_has_a_docstring_naming_paper_and_inputs(name: str) -> None:
    doc = ORDERINGS[name].fn.__doc__ or ""
    assert "Paper:" in doc and "Inputs:" in doc


@pytest.mark.parametrize("name", sorted(ORDERINGS))
def test_every_ordering_runs_per_fold(
    name: str, inputs: tuple[pl.DataFrame, pl.DataFrame, Inputs]
) -> None:
    """Fold 1 then fold 0 in the input: the output is fold 0 then fold 1, each exactly the
    ordering of that fold's triples alone, seeded (seed, fold), positions from 0."""
    triples, scores, inp = inputs
    folded = pl.concat(
        [
            triples.head(40).with_columns(pl.lit(1, pl.Int64).alias("fold")),
            triples.tail(40).with_columns(pl.lit(0, pl.Int64).alias("fold")),
        ]
    )
    record = ORDERINGS[name]
    cfg = record.config(psi="tf_abs") if name == "curriculum" else record.config()
    out = apply_ordering(record, folded, scores, cfg, psi="tf_abs", seed=5, tables=inp.tables)
    schemas.validate(out.to_arrow(), schemas.ORDERED_TRIPLES, name)
    assert out["fold"].to_list() == sorted(out["fold"].to_list())
    for fold, part in ((0, triples.tail(40)), (1, triples.head(40))):
        got = out.filter(pl.col("fold") == fold).drop("fold")
        alone = record.fn(part, scores, cfg, Inputs("tf_abs", (5, fold), None, inp.tables))
        assert got.equals(alone), fold
        assert got["position"].to_list() == list(range(got.height))


def test_unknown_ordering_lists_known_ones_and_the_closest() -> None:
    with pytest.raises(
        ValueError,
        match=r"unknown ordering 'curicullum'; known: \[.*'lws'.*'shuffle'.*\]; "
        r"did you mean 'curriculum'\?",
    ):
        get_ordering("curicullum")
    with pytest.raises(ValueError, match=r"unknown ordering 'x'; known: \[[^]]*\]$"):
        get_ordering("x")
