"""The held-out transfer collection (GenderBias-QA): loading and evaluation (issue 21)."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.data.genderbias_qa import RESOURCE_DIR, DataError, load_genderbias_qa
from pipeline.metrics.runner import Shared, evaluate_run, evaluate_transfer
from pipeline.params import EvaluateParams


def test_the_shipped_collection_has_two_female_and_two_male_answers_per_question() -> None:
    c = load_genderbias_qa(splits=("test",))
    assert c.queries.height == 145 and c.corpus.height == 4 * 145  # the test split
    assert c.queries["query_id"].n_unique() == 145 and c.corpus["doc_id"].n_unique() == 580
    assert c.queries["query_id"].str.starts_with("gbqa-test-").all()
    per_query = c.qrels.join(c.corpus, on="doc_id").group_by("query_id", "group").len()
    assert set(per_query["len"]) == {2} and set(per_query["group"]) == {"F", "M"}
    assert (c.qrels["relevance"] == 1).all()
    both = load_genderbias_qa(splits=("test", "train"))
    assert both.queries.height == 145 + 172 and both.corpus["doc_id"].n_unique() == 4 * 317
    # the questions are gender-neutral, the answers are not
    assert not c.queries["text"].str.contains(r"(?i)\b(she|he|her|his|woman|man)\b").any()


def test_a_broken_file_names_itself(tmp_path: Path) -> None:
    root = tmp_path / "gbqa"
    shutil.copytree(RESOURCE_DIR, root)
    f = root / "GenderBias-QA_test.csv"
    f.write_text(f.read_text(encoding="utf-8").replace("bias2-document2", "bias2-doc2", 1))
    with pytest.raises(DataError, match=r"GenderBias-QA_test\.csv: missing columns"):
        load_genderbias_qa(root)
    with pytest.raises(DataError, match="splits"):
        load_genderbias_qa(splits=("dev",))


def _shared() -> Shared:
    docs = ["f1", "f2", "m1", "m2", "x"]
    scores = pl.DataFrame({"doc_id": docs, **{c: [1, 1, 0, 0, 0] for c in ("tc_f", "bool_f")},
                           **{c: [0, 0, 1, 1, 0] for c in ("tc_m", "bool_m")},
                           "tf_f": [0.7, 0.7, 0.0, 0.0, 0.0], "tf_m": [0.0, 0.0, 0.7, 0.7, 0.0],
                           "psi_tc": [1.0, 1.0, -1.0, -1.0, 0.0],
                           "psi_tf": [0.7, 0.7, -0.7, -0.7, 0.0],
                           "psi_bool": [1.0, 1.0, -1.0, -1.0, 0.0], "neutrality": [1.0] * 5,
                           "lex_f": [0.1, 0.1, 0.0, 0.0, 0.0], "lex_m": [0.0, 0.0, 0.1, 0.1, 0.0],
                           "n_words": [10] * 5})  # fmt: skip
    qrels = pl.DataFrame({"query_id": ["q"] * 4, "doc_id": docs[:4], "relevance": [1] * 4})
    cands = pl.DataFrame({"query_id": ["q"] * 5, "doc_id": docs, "rank": [1, 2, 3, 4, 5],
                          "score": [5.0, 4, 3, 2, 1]})  # fmt: skip
    groups = pl.DataFrame({"doc_id": docs[:4], "group": ["F", "F", "M", "M"]})
    empty = pl.DataFrame(schema={"doc_id": pl.Utf8, "dimension": pl.Utf8, "group": pl.Utf8,
                                 "weight": pl.Float64})  # fmt: skip
    return Shared(qrels, scores, cands, groups, empty, None)


def _run(order: list[str], fold: int) -> pl.DataFrame:
    return pl.DataFrame({"query_id": ["q"] * 5, "doc_id": order, "score": [5.0, 4, 3, 2, 1],
                         "rank": [1, 2, 3, 4, 5], "fold": [fold] * 5})  # fmt: skip


def test_a_query_is_the_mean_over_the_fold_models() -> None:
    s, p = _shared(), EvaluateParams(cutoffs=[10])
    female_first = _run(["f1", "f2", "m1", "m2", "x"], 0)
    male_first = _run(["m1", "m2", "f1", "f2", "x"], 1)
    agg, per_query = evaluate_transfer(pl.concat([female_first, male_first]), s, p)
    one = {f: evaluate_run(r.drop("fold"), s, p)[1] for f, r in ((0, female_first),
                                                              (1, male_first))}  # fmt: skip
    assert per_query["query_id"].to_list() == ["q"]
    for key in ("gap-mean", "gap-male-wins", "ARaB-tf@10", "MRR@10"):
        expected = (one[0][key][0] + one[1][key][0]) / 2
        assert per_query[key][0] == pytest.approx(expected), key
    assert one[0]["gap-mean"][0] < 0 < one[1]["gap-mean"][0]  # female first: negative gap
    assert agg["gap-male-wins"] == pytest.approx(0.5)


def test_transfer_max_queries_keeps_the_first_questions_and_their_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dataset.genderbias_qa.max_queries: N` (small profiles): the transfer_data stage writes
    the first N question ids, only the documents they judge, and candidates over those
    documents."""
    import yaml

    from stages import transfer_data

    root = Path(__file__).resolve().parents[2]
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["dataset"]["genderbias_qa"]["max_queries"] = 3
    for key in ("wordlist_specific", "wordlist_representative"):  # paths from the repository
        params["score"][key] = str(root / params["score"][key])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    transfer_data.main([])
    queries = pl.read_parquet(tmp_path / "data/transfer/queries.parquet")
    corpus = pl.read_parquet(tmp_path / "data/transfer/corpus.parquet")
    cands = pl.read_parquet(tmp_path / "data/transfer/candidates.parquet")
    full = load_genderbias_qa()
    assert queries["query_id"].to_list() == sorted(full.queries["query_id"].to_list())[:3]
    assert corpus.height == 12  # two female- and two male-leaning answers per question
    assert set(cands["query_id"]) == set(queries["query_id"])
    assert set(cands["doc_id"]) <= set(corpus["doc_id"])
