"""TREC Fair 2022 extraction through fake ir_datasets objects with the real document class."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from ir_datasets.datasets.trec_fair import FairTrec2022Doc, FairTrec2022TrainQuery
from ir_datasets.formats import TrecQrel

from pipeline import schemas
from pipeline.data import irds
from pipeline.data.trec_fair import (
    DATASET_ID,
    TrecFairConfig,
    doc_alignments,
    extract_trec_fair,
    field_distribution,
    sample_qrels,
)
from pipeline.metrics.inputs import intersect
from tests.unit.irds_fakes import FakeDataset, loader


def article(doc_id: str, **meta: Any) -> FairTrec2022Doc:
    fields = dict.fromkeys(FairTrec2022Doc._fields)
    fields.update(doc_id=doc_id, title=f"Title {doc_id}", text=f"Body of {doc_id}.", url="u")
    fields.update(meta)
    return FairTrec2022Doc(**fields)


DOCS = [
    article("1", gender_category="Female", page_subcont_regions=["Western Europe"]),
    article("2", gender_category="Male", page_subcont_regions=["Western Europe", "Eastern Asia"]),
    article("3", gender_category=None, page_subcont_regions=[]),
    article("4", gender_category="Male", page_subcont_regions=None),
    article("5", gender_category="Female", page_subcont_regions=["Eastern Asia"]),
    article("6", gender_category="Unknown", page_subcont_regions=["Eastern Asia"] * 2),
]
QUERIES = [FairTrec2022TrainQuery(str(i), f"WikiProject {i}", "u") for i in (1, 2, 3, 10)]
QRELS = [
    TrecQrel(q, d, 1, "0")
    for q, docs in {"1": "123", "2": "345", "3": "56", "10": "16"}.items()
    for d in docs
]


def fake() -> dict[str, FakeDataset]:
    return {DATASET_ID: FakeDataset(docs=DOCS, queries=QUERIES, qrels=QRELS)}


def test_field_distributions_by_kind() -> None:
    assert field_distribution("Female") == {"Female": 1.0}
    assert field_distribution(["B", "A", "A"]) == {"A": 0.5, "B": 0.5}
    assert field_distribution({"Europe": 3, "Asia": 1, "Africa": 0}) == {
        "Europe": 0.75,
        "Asia": 0.25,
    }
    missing_values: list[Any] = [None, "", [], {}, {"x": 0}]
    for missing in missing_values:
        assert field_distribution(missing) == {"Unknown": 1.0}


def test_alignments_are_tidy_and_sum_to_one_per_dimension() -> None:
    out = doc_alignments(DOCS, ["gender_category", "page_subcont_regions"])
    sums = out.group_by("doc_id", "dimension").agg(pl.col("weight").sum())
    assert sums["weight"].to_list() == pytest.approx([1.0] * 12)
    doc2 = out.filter(pl.col("doc_id") == "2", pl.col("dimension") == "page_subcont_regions")
    assert sorted(doc2["group"]) == ["Eastern Asia", "Western Europe"]
    three = out.filter(pl.col("doc_id") == "3")["group"].to_list()
    assert three == ["Unknown", "Unknown"]
    inter = intersect(out).filter(pl.col("doc_id") == "2")
    assert inter.rows() == [
        ("2", "gender_category=Male|page_subcont_regions=Eastern Asia", 0.5),
        ("2", "gender_category=Male|page_subcont_regions=Western Europe", 0.5),
    ]


def test_extract_tables_match_the_schemas() -> None:
    cfg = TrecFairConfig(docs_per_query=None, test_fraction=0.5, seed=1, negatives=1)
    data = extract_trec_fair(cfg, load=loader(fake()))
    schemas.validate(data.corpus.to_arrow(), schemas.CORPUS, "corpus")
    schemas.validate(data.queries.to_arrow(), schemas.QUERIES, "queries")
    schemas.validate(data.qrels.to_arrow(), schemas.QRELS, "qrels")
    schemas.validate(data.triples.to_arrow(), schemas.TRIPLES, "triples")
    schemas.validate(data.alignments.to_arrow(), schemas.ALIGNMENTS, "alignments")
    assert data.corpus["text"][0] == "Title 1 Body of 1."
    assert data.queries["split"].value_counts()["count"].to_list() == [2, 2]
    assert data.qrels.height == len(QRELS)
    judged = set(zip(data.qrels["query_id"], data.qrels["doc_id"], strict=True))
    for q, pos, neg in data.triples.select("query_id", "pos_doc_id", "neg_doc_id").rows():
        assert (q, pos) in judged and (q, neg) not in judged
    train = set(data.queries.filter(pl.col("split") == "train")["query_id"])
    assert set(data.triples["query_id"]) <= train


def test_sampling_keeps_every_judgement_of_the_sampled_docs() -> None:
    cfg = TrecFairConfig(docs_per_query=1, max_queries=2, seed=0)
    data = extract_trec_fair(cfg, load=loader(fake()))
    assert data.queries["query_id"].to_list() == ["1", "2"]  # numeric id order
    assert data.corpus.height <= 2
    docs = set(data.corpus["doc_id"])
    assert set(data.qrels["doc_id"]) == docs
    again = extract_trec_fair(cfg, load=loader(fake()))
    assert again.corpus.equals(data.corpus)
    qrels = pl.DataFrame({"query_id": ["a"] * 5, "doc_id": list("vwxyz"), "relevance": [1] * 5})
    assert sample_qrels(qrels, 2, 3).height == 2


def test_unknown_dimension_lists_the_real_fields() -> None:
    cfg = TrecFairConfig(dimensions=("gender_category", "race"))
    with pytest.raises(ValueError, match=r"\['race'\] are not FairTrec2022Doc metadata fields.*"):
        extract_trec_fair(cfg, load=loader(fake()))


def test_offline_fails_at_once(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    with pytest.raises(
        irds.SourceUnavailableError, match="ir_datasets export trec-fair/2022/train"
    ):
        extract_trec_fair(TrecFairConfig(), probe=lambda host: "no route to host")
