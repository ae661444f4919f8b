"""A trained model as a PyTerrier transformer (issue 15): same scores as the project's own
``score_many``, PyTerrier's 0-based ranks, offline and without starting Java."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyterrier as pt
import pytest
import torch

from pipeline.models.registry import build_ranker, load_ranker, model_params
from pipeline.pyterrier import RankerTransformer, ranked, text_keys

QUERIES = {"q1": "who cares for the child", "q2": "strong engineer at work"}
DOCS = {
    "d1": "she cares for the child every day",
    "d2": "he fixed the engine at work",
    "d3": "an engineer built a strong bridge",
}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = model_params("bi_encoder", name="tiny-random-bert", max_len=32, q_len=8)
    return build_ranker(cfg, 0).save(tmp_path_factory.mktemp("pt") / "m")


def _frame() -> pd.DataFrame:
    """2 queries x 3 docs, with a first-stage score/rank the transformer replaces."""
    rows = [(q, QUERIES[q], d, DOCS[d]) for q in QUERIES for d in DOCS]
    frame = pd.DataFrame(rows, columns=["qid", "query", "docno", "text"])
    frame["score"] = [3.0, 2.0, 1.0] * 2
    frame["rank"] = [0, 1, 2] * 2
    return frame


@pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning")  # add_ranks, pandas 3
def test_scores_equal_the_rankers_own_and_ranks_follow_them(model_dir: Path) -> None:
    frame = _frame()
    out = RankerTransformer(model_dir).transform(frame)

    ref = load_ranker(model_dir)
    ref.bind(QUERIES, DOCS)
    with torch.inference_mode():
        expected = ref.score_many(list(frame["qid"]), list(frame["docno"]), 64).tolist()
    want = {(q, d): s for q, d, s in zip(frame["qid"], frame["docno"], expected, strict=True)}

    assert list(out.columns) == ["qid", "query", "docno", "text", "score", "rank"]
    assert len(out) == 6 and out["rank"].dtype == "int64"
    for q, d, s in zip(out["qid"], out["docno"], out["score"], strict=True):
        assert s == pytest.approx(want[q, d], abs=1e-6)
    assert list(out["qid"]) == ["q1"] * 3 + ["q2"] * 3  # queries keep their first-row order
    for qid, rows in out.groupby("qid", sort=False):
        assert list(rows["rank"]) == [0, 1, 2], qid
        assert rows["score"].is_unique, qid  # the order is decided by the scores alone
        scores = {d: want[str(qid), d] for d in DOCS}
        assert list(rows["docno"]) == sorted(DOCS, key=lambda d: -scores[d]), qid
    # PyTerrier's own ranking of these scores agrees
    assert list(pt.model.add_ranks(out.copy())["rank"]) == list(out["rank"])
    assert not pt.java.started()


def test_composes_with_pyterrier_operators(model_dir: Path) -> None:
    """Candidates from any transformer >> the model, then PyTerrier's rank cut-off."""
    frame = _frame()
    pipe = pt.Transformer.from_df(frame) >> RankerTransformer(model_dir) % 2
    out = pipe.transform(frame[["qid", "query"]].drop_duplicates())
    assert out.groupby("qid")["rank"].apply(list).to_dict() == {"q1": [0, 1], "q2": [0, 1]}
    assert not pt.java.started()


def test_ranked_hand_example() -> None:
    """Scores (1, 3, 3 | 5, 4): ties keep input order; queries in first-row order."""
    frame = pd.DataFrame({"qid": ["b", "b", "b", "a", "a"], "docno": list("xyzuv")})
    out = ranked(frame, [1.0, 3.0, 3.0, 5.0, 4.0])
    assert list(out["docno"]) == ["y", "z", "x", "u", "v"]
    assert list(out["rank"]) == [0, 1, 2, 0, 1]
    assert list(out["score"]) == [3.0, 3.0, 1.0, 5.0, 4.0]
    empty = ranked(frame.iloc[:0], [])
    assert list(empty.columns) == ["qid", "docno", "score", "rank"] and empty.empty


def test_text_keys_one_id_per_distinct_text() -> None:
    assert text_keys(["a b", "c", "a b"]) == (["0", "1", "0"], {"0": "a b", "1": "c"})


def test_directory_that_is_not_a_model(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"not a trained model directory.*Ranker\.save"):
        RankerTransformer(tmp_path)


def test_missing_text_column_names_the_fix(model_dir: Path) -> None:
    frame = _frame().drop(columns="text")
    with pytest.raises(pt.validate.InputValidationError, match="get_text"):
        RankerTransformer(model_dir).transform(frame)


@pytest.mark.slow
def test_project_tables_in_pyterrier_names_feed_an_experiment(tmp_path: Path) -> None:
    """topics/qrels/results give `qid, query`, `qid, docno, label` and `qid, docno, score,
    rank` (0-based), and `pt.Experiment` scores a run read from either file format exactly
    as the project's own metric suite does, without Java."""
    import ir_measures
    import polars as pl

    from pipeline import io, measures
    from pipeline.data.grep_biasir import load_grep_biasir
    from pipeline.pyterrier import qrels, results, topics
    from pipeline.retrieval.bm25 import bm25_topk

    g = load_grep_biasir()
    g.queries.with_columns(split=pl.lit("test")).write_parquet(tmp_path / "queries.parquet")
    io.write_trec_qrels(g.qrels, tmp_path / "qrels.trec")
    run = bm25_topk(g.corpus, g.queries, k=20)
    run = run.with_columns(pl.col("score") - pl.col("rank") * 1e-3)  # no ties: any tool agrees
    run.write_parquet(tmp_path / "run.parquet")
    io.write_trec_run(run, tmp_path / "run.trec", tag="bm25")
    t, q = topics(tmp_path / "queries.parquet"), qrels(tmp_path / "qrels.trec")
    assert list(t.columns) == ["qid", "query"] and len(t) == g.queries.height
    assert list(q.columns) == ["qid", "docno", "label"] and q["label"].dtype == "int64"
    frames = [results(tmp_path / "run.parquet"), results(tmp_path / "run.trec")]
    assert list(frames[0].columns) == ["qid", "docno", "score", "rank"]
    assert frames[0].groupby("qid")["rank"].min().eq(0).all()
    wanted = [ir_measures.RR @ 10, ir_measures.nDCG @ 10]
    systems = [pt.Transformer.from_df(f) for f in frames]
    table = pt.Experiment(systems, t, q, wanted, names=["parquet", "trec"])
    ours = measures.compute(run, g.qrels, measures.Collection.from_corpus(g.corpus))[0]
    for _, row in table.iterrows():
        assert row["RR@10"] == pytest.approx(ours["MRR@10"], abs=1e-12)
        assert row["nDCG@10"] == pytest.approx(ours["nDCG@10"], abs=1e-12)
    assert not pt.java.started()
