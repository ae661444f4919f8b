"""BM25 candidates per fold (SPEC §7): each fold's test queries (reranked and evaluated) and
its training queries (read by the LWS ordering), without leaking documents across the split."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.params import CandidatesParams
from pipeline.retrieval.bm25 import bm25_topk
from pipeline.schemas import ASSIGNMENT

log = logging.getLogger(__name__)


def fold_candidates(
    corpus: pl.DataFrame,
    queries: pl.DataFrame,
    fold: int,
    test: bool,
    p: CandidatesParams,
    k: int | None = None,
    judged: Mapping[str, list[str]] | None = None,
) -> pl.DataFrame:
    """BM25 top-k of fold ``fold``: its test queries (``test``) or its training queries, over
    the documents of the same side when the source splits documents with their queries (as
    Grep-BiasIR does: no leak across the split). ``k``: candidates per query (``p.top_k``).
    ``judged`` (query → its judged doc ids): on the test side, lists shorter than ``top_k``
    are padded (``fill``)."""
    in_fold = pl.col("fold").eq_missing(fold)
    queries = queries.filter(in_fold if test else ~in_fold)
    if "fold" in corpus.columns:
        corpus = corpus.filter(
            pl.col("fold").eq_missing(fold) if test else ~pl.col("fold").eq_missing(fold)
        )
    if queries.height == 0 or corpus.height == 0:
        raise InputError(
            f"fold {fold} has no {'test' if test else 'training'} queries or documents; "
            "adjust dataset.grep_biasir.folds / test_fraction"
        )
    cands = bm25_topk(corpus, queries, k=p.top_k if k is None else k, k1=p.k1, b=p.b)
    if test:
        cands = fill(cands, queries, corpus["doc_id"], judged or {}, p.top_k, (p.fill_seed, fold))
    return cands.select("query_id", "doc_id", "rank", "score").with_columns(
        pl.lit(fold, dtype=pl.Int64).alias("fold")
    )


def fill(
    cands: pl.DataFrame,
    queries: pl.DataFrame,
    docs: pl.Series,
    judged: Mapping[str, list[str]],
    k: int,
    seed: int | tuple[int, ...],
) -> pl.DataFrame:
    """Pad every query's BM25 list to ``k`` documents (SPEC §7, issue 21 "a testbed that can
    move"). BM25 ranks only documents that share a term with the query: on Grep-BiasIR with
    2 folds a fold's test side has ~350 documents and a query matched 34.6 on average (10 of
    117 fewer than 10), so rank-based metrics could not move on short lists. The fill appends, after
    BM25's matches and tied at score 0: first the query's own judged documents that BM25
    missed (every version of its relevant and non-relevant document, so the counterfactual
    comparison is defined for every query; relevance is not revealed: both kinds are added),
    then the side's other documents in a seeded random order (one permutation per fold).
    A query that matched nothing gets the whole list this way. The filled documents are other
    queries' (1,657 of the 5,850 candidates of the 2-fold default): evaluate also condenses
    each run to the query's judged documents (``evaluate.scopes``, docs/decisions.md)."""
    have = dict(cands.group_by("query_id").agg(pl.col("doc_id")).iter_rows())
    short = [q for q in queries["query_id"].to_list() if len(have.get(q, [])) < k]
    if not short:
        return cands
    pool = sorted(docs.to_list())
    order = [pool[i] for i in np.random.default_rng(seed).permutation(len(pool))]
    rows = []
    for q in short:
        present = set(have.get(q, []))
        own = [d for d in sorted(judged.get(q, [])) if d not in present]
        taken = set(own)
        extra = (d for d in order if d not in present and d not in taken)
        added = [*own, *(next(extra, None) for _ in range(k - len(present) - len(own)))]
        rows += [(q, d, len(present) + i + 1) for i, d in enumerate(added[: k - len(present)]) if d]
    log.info("candidates: %d of %d queries had fewer than %d BM25 matches; filled %d documents "
             "(own judged first, then random) at score 0", len(short), queries.height, k,
             len(rows))  # fmt: skip
    extra_rows = pl.DataFrame(rows, schema={"query_id": pl.Utf8, "doc_id": pl.Utf8,
                                            "rank": pl.Int64}, orient="row")  # fmt: skip
    extra_rows = extra_rows.with_columns(pl.lit(0.0).alias("score"))
    return pl.concat([cands.select("query_id", "doc_id", "rank", "score"),
                      extra_rows.select("query_id", "doc_id", "rank", "score")])  # fmt: skip


def candidates(
    corpus: pl.DataFrame,
    queries: pl.DataFrame,
    first_stage: pl.DataFrame,
    p: CandidatesParams,
    qrels: pl.DataFrame | None = None,
    assignments: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(test candidates, training candidates)`` over every fold of ``queries``. A source
    that ships its first-stage run (MS MARCO 215 set: BM25 top-200) has its top ``p.top_k``
    reranked instead of BM25's (as fold 0). Test lists shorter than ``p.top_k`` are filled
    (``fill``; the judged documents come from ``qrels``). Training candidates:
    ``p.train_top_k`` per query (``None``: ``p.top_k``; ``0``: an empty table, for runs
    without the ``lws`` ordering). ``assignments`` (``schemas.FOLDS``) with several fold
    assignments: the candidates of each, tagged with its ``assignment``."""
    if assignments is not None and assignments[ASSIGNMENT].n_unique() > 1:
        tests, trains = [], []
        for a in sorted(assignments[ASSIGNMENT].unique().to_list()):
            c, q = assigned(corpus, queries, qrels, assignments, a)
            test, train = candidates(c, q, first_stage, p, qrels)
            tag = pl.lit(a, pl.Int64).alias(ASSIGNMENT)
            tests.append(test.with_columns(tag))
            trains.append(train.with_columns(tag))
        return pl.concat(tests), pl.concat(trains)
    folds = sorted(queries["fold"].drop_nulls().unique().to_list())
    judged: dict[str, list[str]] = {}
    if qrels is not None:
        judged = dict(qrels.group_by("query_id").agg(pl.col("doc_id")).iter_rows())
    if first_stage.height:
        fold = pl.lit(0, dtype=pl.Int64).alias("fold")
        test = first_stage.filter(pl.col("rank") <= p.top_k).with_columns(fold)
    else:
        test = pl.concat([fold_candidates(corpus, queries, f, True, p, judged=judged)
                          for f in folds])  # fmt: skip
    k = p.top_k if p.train_top_k is None else p.train_top_k
    if k == 0:
        return test, test.clear()
    train = pl.concat([fold_candidates(corpus, queries, f, False, p, k) for f in folds])
    return test, train


def assigned(
    corpus: pl.DataFrame, queries: pl.DataFrame, qrels: pl.DataFrame | None,
    assignments: pl.DataFrame, a: int,
) -> tuple[pl.DataFrame, pl.DataFrame]:  # fmt: skip
    """``(corpus, queries)`` with the folds of assignment ``a``: a query's from
    ``assignments``, a document's (when the corpus is split with its queries, i.e. has
    ``fold``) that of the query that judges it in ``qrels``."""
    fold_of = assignments.filter(pl.col(ASSIGNMENT) == a).select("query_id", "fold")
    queries = queries.drop("fold", strict=False).join(fold_of, on="query_id", how="left")
    if "fold" in corpus.columns:
        if qrels is None:
            raise InputError(
                "candidates: a corpus split with its queries needs the qrels to give each "
                "document its query's fold in another fold assignment"
            )
        owner = qrels.select("doc_id", "query_id").unique("doc_id", keep="first")
        doc_fold = owner.join(fold_of, on="query_id").select("doc_id", "fold")
        corpus = corpus.drop("fold").join(doc_fold, on="doc_id", how="left")
    return corpus, queries


def n_assignments(table: pl.DataFrame) -> int:
    """How many fold assignments ``table`` holds (1 without an ``assignment`` column)."""
    if ASSIGNMENT not in table.columns or table.height == 0:
        return 1
    return int(table[ASSIGNMENT].max()) + 1  # type: ignore[arg-type]


def assignment_of(seeds: Sequence[int] | None, seed: int, n: int) -> int:
    """The fold assignment of run seed ``seed``: the i-th of ``train.seeds`` uses ``i mod
    n``; a seed not among them (an untrained row's ``train.seed``) uses assignment 0."""
    order = list(seeds or [])
    return order.index(seed) % n if seed in order else 0


def for_seed(table: pl.DataFrame, seeds: Sequence[int] | None, seed: int) -> pl.DataFrame:
    """``table``'s rows of the fold assignment of ``seed`` (``assignment_of``), without the
    ``assignment`` column; ``table`` itself when it has one assignment."""
    if ASSIGNMENT not in table.columns:
        return table
    a = assignment_of(seeds, seed, n_assignments(table))
    return table.filter(pl.col(ASSIGNMENT) == a).drop(ASSIGNMENT)
