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
