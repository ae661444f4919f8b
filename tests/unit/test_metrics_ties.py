"""Tie-aware fairness metrics (SPEC §1 "Ties"; McSherry & Najork 2008): tied documents share
the mean weight of their block's positions, so no fairness number depends on tie order."""

from __future__ import annotations

import math
from math import log2
from typing import Any

import numpy as np
import polars as pl
import pytest

from pipeline.metrics import EvalInputs
from pipeline.metrics.arab import arab
from pipeline.metrics.counterfactual import SKIPPED, counterfactual
from pipeline.metrics.nfairr import nfairr
from pipeline.metrics.suite import evaluate
from pipeline.retrieval.bm25 import bm25_topk
from pipeline.ties import BLOCK, arab_weight, identity_rank, tie_averaged

SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64, "rank": pl.Int64}
FAIRNESS = ("arab", "nfairr", "liwc", "awrf", "counterfactual", "exposure")
# Effectiveness keeps the run's order (trec_eval/ranx convention), and so does its product.
TIE_ORDER_DEPENDENT = ("MRR@", "nDCG@", "nDCGxAWRF@")
ZERO = ("tc_f", "tc_m", "tf_f", "tf_m", "bool_f", "bool_m", "psi_tc", "psi_tf", "psi_bool")


def run_of(lists: dict[str, list[tuple[str, float]]]) -> pl.DataFrame:
    """A run from `(doc_id, score)` lists in rank order."""
    rows = [(q, d, s, r) for q, docs in lists.items() for r, (d, s) in enumerate(docs, 1)]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def doc_scores(values: dict[str, dict[str, float]]) -> pl.DataFrame:
    """doc_scores rows; unspecified columns 0, neutrality 1."""
    return pl.DataFrame(
        [
            {"doc_id": d, "n_words": 10}
            | dict.fromkeys(ZERO, 0.0)
            | {"neutrality": 1.0, "lex_f": 0.0, "lex_m": 0.0}
            | v
            for d, v in values.items()
        ]
    )


def p(r: int) -> float:
    return 1 / log2(r + 1)


# One query, b and c tied at ranks 2 and 3.
TIED = run_of({"q": [("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 1.0)]})
SCORES = doc_scores(
    {
        "a": {"tc_f": 1.0, "neutrality": 0.0},
        "b": {"tc_m": 2.0, "neutrality": 1.0},
        "c": {"tc_f": 2.0, "neutrality": 0.5},
        "d": {"tc_m": 1.0, "neutrality": 1.0},
    }
)


def arab_nested(pairs: list[tuple[float, float]], k: int) -> float:
    """male − female of ARaB_q@k as the published nested means (one fixed order)."""
    n = min(k, len(pairs))
    rab = [
        (sum(f for f, _ in pairs[:t]) / t, sum(m for _, m in pairs[:t]) / t)
        for t in range(1, n + 1)
    ]
    return sum(m for _, m in rab) / n - sum(f for f, _ in rab) / n


def test_arab_weight_is_the_linear_form_of_the_nested_means() -> None:
    w = arab_weight(10)(np.array([1, 2, 3, 4]), np.array([4, 4, 4, 4]))
    assert w == pytest.approx([25 / 48, 13 / 48, 7 / 48, 3 / 48], abs=1e-15)
    w2 = arab_weight(2)(np.array([1, 2, 3]), np.array([3, 3, 3]))
    assert w2.tolist() == [0.75, 0.25, 0.0]


def test_arab_with_a_tie_block_by_hand() -> None:
    out = arab(EvalInputs(TIED, doc_scores=SCORES), (2, 10)).row(0, named=True)
    # k' = 4: w = (25, 13, 7, 3) / 48; b and c share (13 + 7) / 96 = 10 / 48 each.
    # m − f: a −1, b +2, c −2, d +1
    assert out["ARaB-tc@10"] == pytest.approx((-25 + 2 * 10 - 2 * 10 + 3) / 48, abs=1e-15)
    # k' = 2: w = (3/4, 1/4, 0, 0); the block straddles the cut-off: (1/4 + 0) / 2 each.
    assert out["ARaB-tc@2"] == pytest.approx(-0.75 + 2 / 8 - 2 / 8, abs=1e-15)
    assert out["ARaB-tc-abs@2"] == pytest.approx(0.75, abs=1e-15)
    # ... which is the mean of the published ARaB over the two orders of the block.
    pairs = {"a": (1, 0), "b": (0, 2), "c": (2, 0), "d": (0, 1)}
    for k in (2, 10):
        orders = (["a", "b", "c", "d"], ["a", "c", "b", "d"])
        expected = sum(arab_nested([pairs[d] for d in o], k) for o in orders) / 2
        assert out[f"ARaB-tc@{k}"] == pytest.approx(expected, abs=1e-12)


def test_block_straddling_the_cutoff_keeps_its_lower_members() -> None:
    rows = tie_averaged(TIED, {"w": arab_weight(2)}, depth=2)
    assert rows["doc_id"].to_list() == ["a", "b", "c"]  # d's block starts below rank 2
    assert rows[BLOCK].to_list() == [1, 2, 2]
    assert rows["w"].to_list() == [0.75, 0.125, 0.125]
    # c only (rank 3) has weight 0 without tie handling; here it shares b's.
    only = arab(EvalInputs(TIED, doc_scores=SCORES), (2,))
    assert only["ARaB-tc@2"][0] == pytest.approx(-0.75, abs=1e-15)


def test_nfairr_with_a_tie_block_by_hand() -> None:
    background = TIED.select("query_id", "doc_id", "rank")
    out = nfairr(EvalInputs(TIED, doc_scores=SCORES, candidates=background), (2, 10)).row(
        0, named=True
    )
    # zeta: a 0, b 1, c 0.5, d 1; b and c share (p(2) + p(3)) / 2.
    fairr_10 = 0.0 * p(1) + (1.0 + 0.5) * (p(2) + p(3)) / 2 + 1.0 * p(4)
    ifairr_10 = 1.0 * p(1) + 1.0 * p(2) + 0.5 * p(3) + 0.0 * p(4)  # b, d, c, a
    assert out["NFaiRR@10"] == pytest.approx(fairr_10 / ifairr_10, abs=1e-15)
    fairr_2 = (1.0 + 0.5) * (p(2) + 0.0) / 2  # position 3 is past the cut-off
    assert out["NFaiRR@2"] == pytest.approx(fairr_2 / (p(1) + p(2)), abs=1e-15)


def test_mean_rank_of_a_tie_block() -> None:
    rows = tie_averaged(TIED, {"r": identity_rank})
    assert dict(zip(rows["doc_id"], rows["r"], strict=True)) == {
        "a": 1.0,
        "b": 2.5,
        "c": 2.5,
        "d": 4.0,
    }
    with pytest.raises(ValueError, match="clash"):
        tie_averaged(TIED, {"rank": identity_rank})


# ---- tie order does not matter -------------------------------------------------------------


def _tables(seed: int) -> dict[str, pl.DataFrame]:
    """Random Grep-BiasIR-shaped evaluation with many ties: each query has relevant and
    non-relevant documents in F/M/N versions; scores from a small set of values."""
    rng = np.random.default_rng(seed)
    run, qrels, groups, scores = [], [], [], {}
    for q in range(6):
        docs = [f"q{q}{kind}{i}{g}" for kind in "rn" for i in range(3) for g in "fmn"]
        values = rng.integers(0, 4, size=len(docs)).astype(float)
        if q % 2 == 0:  # F and M versions of the first relevant document tied
            values[1] = values[0]
        order = np.lexsort((rng.permutation(len(docs)), -values))
        run += [(f"q{q}", docs[i], values[i], r) for r, i in enumerate(order, 1)]
        for d in docs:
            qrels.append((f"q{q}", d, int(d[2] == "r")))
            groups.append((d, d[-1].upper()))
            c_f, c_m = (int(x) for x in rng.integers(0, 3, size=2))
            scores[d] = {
                "tc_f": float(c_f),
                "tc_m": float(c_m),
                "tf_f": math.log(c_f + 1),
                "tf_m": math.log(c_m + 1),
                "bool_f": float(c_f > 0),
                "bool_m": float(c_m > 0),
                "neutrality": float(rng.uniform()),
                "lex_f": float(rng.uniform(0, 0.2)),
                "lex_m": float(rng.uniform(0, 0.2)),
            }
    frame = pl.DataFrame(run, schema=SCHEMA, orient="row")
    return {
        "run": frame,
        "qrels": pl.DataFrame(qrels, schema=["query_id", "doc_id", "relevance"], orient="row"),
        "doc_scores": doc_scores(scores),
        "candidates": frame.select("query_id", "doc_id", "rank"),
        "doc_groups": pl.DataFrame(groups, schema=["doc_id", "group"], orient="row"),
    }


def _reverse_ties(run: pl.DataFrame) -> pl.DataFrame:
    """The same run with the documents of every tie block in reverse order."""
    flipped = run.sort(["query_id", "score", "rank"], descending=[False, True, True])
    return flipped.with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))


def _fairness(tables: dict[str, Any], cutoffs: tuple[int, ...]) -> dict[str, list[Any]]:
    _, per_query = evaluate(EvalInputs(**tables), list(FAIRNESS), cutoffs)
    return {
        c: per_query[c].to_list()
        for c in per_query.columns
        if c != "query_id" and not c.startswith(TIE_ORDER_DEPENDENT)
    }


def _assert_same(a: dict[str, list[Any]], b: dict[str, list[Any]]) -> None:
    assert a.keys() == b.keys()
    for column in a:
        for x, y in zip(a[column], b[column], strict=True):
            if x is None or y is None:
                assert x is None and y is None, column
            else:
                assert abs(x - y) <= 1e-12, (column, x, y)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reversing_tie_blocks_changes_no_fairness_metric(seed: int) -> None:
    tables = _tables(seed)
    reversed_run = _reverse_ties(tables["run"])
    assert not reversed_run["doc_id"].equals(tables["run"]["doc_id"])  # the order did change
    before = _fairness(tables, (3, 10))
    after = _fairness(tables | {"run": reversed_run}, (3, 10))
    assert {"ARaB-tc@3", "NFaiRR@10", "LIWC@3", "AWRF@10", "gap-mean", "EE-L@20"} <= set(before)
    _assert_same(before, after)


def test_reversed_corpus_gives_the_same_fairness_metrics() -> None:
    """BM25 breaks ties by corpus order; the F/M versions below get equal BM25 scores, so a
    reversed corpus swaps them in the candidate list, and no fairness metric may move."""
    jobs = {"1": ("nurse", "hospital ward"), "2": ("engineer", "bridge design")}
    words = {"f": "woman", "m": "man", "n": "person"}
    docs = []
    for q, (job, topic) in jobs.items():
        for g, word in words.items():
            docs.append((f"r{q}{g}", f"the {word} works as a {job} on the {topic}"))
            docs.append((f"n{q}{g}", f"the {word} likes cooking and the {topic}"))
    corpus = pl.DataFrame(docs, schema=["doc_id", "text"], orient="row")
    queries = pl.DataFrame({"query_id": list(jobs), "text": [f"{j} {t}" for j, t in jobs.values()]})
    forward = bm25_topk(corpus, queries, k=corpus.height)
    backward = bm25_topk(corpus.reverse(), queries, k=corpus.height)
    # Same scores per document, different tie order.
    key = ["query_id", "doc_id"]
    joined = forward.join(backward, on=key, suffix="_b")
    assert joined.height == forward.height == backward.height
    assert joined["score"].to_list() == joined["score_b"].to_list()
    assert not forward["doc_id"].equals(backward["doc_id"])
    ranks = joined.filter(pl.col("doc_id").is_in(["r1f", "r1m"])).sort("doc_id")
    assert ranks["score"][0] == ranks["score"][1]  # F and M versions tie
    assert ranks["rank"].to_list() != ranks["rank_b"].to_list()  # ... and swap places

    ids = corpus["doc_id"].to_list()
    counts = {"f": ("tc_f", "bool_f", "lex_f"), "m": ("tc_m", "bool_m", "lex_m"), "n": ()}
    scores = doc_scores(
        {
            d: dict.fromkeys(counts[d[-1]], 1.0)
            | {"lex_f" if d[-1] == "f" else "lex_m": 0.1 if d[-1] != "n" else 0.0}
            | {"neutrality": 1.0 if d[-1] == "n" else 0.0}
            for d in ids
        }
    )
    shared = {
        "qrels": pl.DataFrame(
            [(q, d, int(d[0] == "r")) for q in jobs for d in ids if d[1] == q],
            schema=["query_id", "doc_id", "relevance"],
            orient="row",
        ),
        "doc_scores": scores,
        "doc_groups": pl.DataFrame({"doc_id": ids, "group": [d[-1].upper() for d in ids]}),
    }

    def tables(run: pl.DataFrame) -> dict[str, pl.DataFrame]:
        return shared | {"run": run, "candidates": run.select("query_id", "doc_id", "rank")}

    before = _fairness(tables(forward), (2, 10))
    after = _fairness(tables(backward), (2, 10))
    assert before["gap-mean"] == [0.0, 0.0]  # tied F/M versions: no gap
    _assert_same(before, after)


# ---- counterfactual gap --------------------------------------------------------------------

GROUPS = pl.DataFrame(
    {
        "doc_id": ["rf", "rm", "rn", "nf", "nm", "nn"],
        "group": ["F", "M", "N", "F", "M", "N"],
    }
)


def test_tied_female_and_male_versions_have_gap_zero() -> None:
    qrels = pl.DataFrame(
        [(q, d, int(d[0] == "r")) for q in ("q1", "q2", "q3") for d in GROUPS["doc_id"]],
        schema=["query_id", "doc_id", "relevance"],
        orient="row",
    )
    run = run_of(
        {
            # M listed first, but tied with F: gap 0, not 1
            "q1": [("nf", 5.0), ("rm", 4.0), ("rf", 4.0), ("rn", 4.0), ("nm", 1.0)],
            # F listed first, tied with M
            "q2": [("rf", 2.0), ("rm", 2.0), ("nn", 1.0)],
            # not tied: the male version wins by 2 ranks
            "q3": [("rm", 3.0), ("nf", 2.0), ("rf", 1.0)],
        }
    )
    out = counterfactual(EvalInputs(run, qrels=qrels, doc_groups=GROUPS), (10,))
    rows = {r["query_id"]: r for r in out.iter_rows(named=True)}
    for q in ("q1", "q2"):
        assert rows[q]["gap-mean"] == 0.0
        assert rows[q]["gap-abs"] == 0.0
        assert rows[q]["gap-male-wins"] == 0.5  # a tie counts ½
        assert rows[q][SKIPPED] == 0
    assert rows["q3"]["gap-mean"] == 2.0
    assert rows["q3"]["gap-male-wins"] == 1.0
