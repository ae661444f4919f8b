"""Fold splits that vary with the seed (issue 29, `dataset.grep_biasir.splits`): assignment a
of the k-fold split numbers its folds a·k … a·k + k − 1, the i-th of `train.seeds` trains,
reranks and is evaluated on assignment i mod splits, and `splits: 1` writes the tables as
before."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline import schemas
from pipeline.data.common import Extracted
from pipeline.data.grep_biasir import GrepBiasIRConfig, extract
from pipeline.errors import InputError
from pipeline.params import CandidatesParams
from pipeline.retrieval.folds import assignment_of, candidates, for_seed, n_assignments


@pytest.fixture(scope="module")
def two() -> tuple[Extracted, Extracted]:
    one = extract(GrepBiasIRConfig(max_queries=24, bm25_negatives=1, bm25_pool=3))
    two = extract(GrepBiasIRConfig(max_queries=24, bm25_negatives=1, bm25_pool=3, splits=2))
    return one, two


def test_one_assignment_writes_the_tables_as_before(two: tuple[Extracted, Extracted]) -> None:
    one, both = two
    assert one.folds is not None and both.folds is not None
    assert "assignment" not in one.triples.columns
    assert one.folds["assignment"].unique().to_list() == [0]
    assert both.queries.equals(one.queries) and both.corpus.equals(one.corpus)
    first = both.triples.filter(pl.col("assignment") == 0).drop("assignment")
    assert first.equals(one.triples)  # assignment 0 is the split `splits: 1` draws


def test_each_assignment_is_a_k_fold_split_of_its_own(two: tuple[Extracted, Extracted]) -> None:
    _, both = two
    folds = both.folds
    assert folds is not None
    schemas.validate(folds.to_arrow(), schemas.FOLDS, "folds")
    schemas.validate(both.triples.to_arrow(), schemas.TRIPLES, "triples")
    for a in (0, 1):
        own = folds.filter(pl.col("assignment") == a)
        assert own.height == 24 and set(own["fold"]) == {2 * a, 2 * a + 1}
    test_of = {a: dict(folds.filter(pl.col("assignment") == a).select("query_id", "fold")
                       .iter_rows()) for a in (0, 1)}  # fmt: skip
    moved = sum(test_of[0][q] % 2 != test_of[1][q] % 2 for q in test_of[0])
    assert 0 < moved < 24  # the second assignment is a different split
    for (fold, a), part in both.triples.group_by("fold", "assignment"):
        assert fold // 2 == a
        # fold c's model trains on the other folds' queries of the same assignment
        assert all(test_of[a][q] != fold for q in part["query_id"].unique())
    with pytest.raises(InputError, match="splits"):
        extract(GrepBiasIRConfig(max_queries=24, folds=1, splits=2))


def test_candidates_per_assignment_rank_each_folds_own_documents(
    two: tuple[Extracted, Extracted],
) -> None:
    _, both = two
    assert both.folds is not None
    first = pl.DataFrame(schema=dict.fromkeys(("query_id", "doc_id"), pl.Utf8)
                         | {"rank": pl.Int64, "score": pl.Float64})  # fmt: skip
    p = CandidatesParams(top_k=8)
    test, train = candidates(both.corpus, both.queries, first, p, both.qrels, both.folds)
    assert n_assignments(test) == 2 and n_assignments(train) == 2
    owner = dict(both.qrels.select("doc_id", "query_id").iter_rows())
    fold_of = {(a, q): f for q, a, f in both.folds.iter_rows()}
    for (a, fold), part in test.group_by("assignment", "fold"):
        assert all(fold_of[(a, q)] == fold for q in part["query_id"])
        assert all(fold_of[(a, owner[d])] == fold for d in part["doc_id"])  # no leak
    assert test.group_by("assignment").agg(pl.col("query_id").n_unique())["query_id"].to_list() \
        == [24, 24]  # fmt: skip
    # a seed's view: its assignment's lists, one per query
    seeds = [1, 2, 3]
    assert [assignment_of(seeds, s, 2) for s in (1, 2, 3, 42)] == [0, 1, 0, 0]
    view = for_seed(test, seeds, 2)
    assert "assignment" not in view.columns and set(view["fold"]) == {2, 3}
    assert view.group_by("query_id").len()["len"].max() == 8
    assert for_seed(view, seeds, 2).equals(view)  # one assignment: the table itself
