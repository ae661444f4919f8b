"""TREC Fair 2022 extraction through the real ir_datasets on miniature files in its formats
(`tests/irds_miniature.py`), offline."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import ir_datasets
import polars as pl
import pytest
from ir_datasets.datasets.trec_fair import FairTrec2022Doc, JsonlDocs

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
from pipeline.data.trec_fair_articles import HEAD, _records, read_articles
from pipeline.metrics.inputs import intersect
from tests.conftest import Miniature, NoNetwork


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


def test_articles_are_read_as_ir_datasets_builds_them(
    miniature: Miniature, no_network: NoNetwork
) -> None:
    """`read_articles` streams the two files; ir_datasets' own docstore gives the same
    documents (with metadata, without metadata, non-ASCII) and lacks the same ids."""
    dataset = ir_datasets.load(DATASET_ID)
    wanted = ["7", miniature.trec_fair.no_metadata, "1", "3", "399", "99999"]
    ours = {d.doc_id: d for d in read_articles(dataset, wanted)}
    theirs = dataset.docs_store().get_many(wanted)
    assert ours == theirs and sorted(ours) == sorted(set(wanted) - {"99999"})
    assert ours["7"].text.startswith("naïve café") and ours["7"].pred_qual is not None
    assert ours[miniature.trec_fair.no_metadata].gender_category is None


def test_extract_reads_no_docstore_and_matches_the_schemas(
    miniature: Miniature, no_network: NoNetwork, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_docstore(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the docstore loads every metadata record into one dict")

    monkeypatch.setattr(JsonlDocs, "docs_store", no_docstore)
    cfg = TrecFairConfig(docs_per_query=None, test_fraction=0.5, seed=1, negatives=1)
    data = extract_trec_fair(cfg)
    for table, schema in [
        (data.corpus, schemas.CORPUS),
        (data.queries, schemas.QUERIES),
        (data.qrels, schemas.QRELS),
        (data.triples, schemas.TRIPLES),
        (data.alignments, schemas.ALIGNMENTS),
    ]:
        schemas.validate(table.to_arrow(), schema, schema.name)
    topics = miniature.trec_fair.topics
    assert data.queries["query_id"].to_list() == [str(t["id"]) for t in topics]  # 1,2,3,10,…
    assert data.queries["split"].value_counts()["count"].to_list() == [3, 3]
    planted = {(str(t["id"]), str(d)) for t in topics for d in t["rel_docs"]}
    assert set(zip(data.qrels["query_id"], data.qrels["doc_id"], strict=True)) == planted
    one = miniature.trec_fair.articles["1"]
    assert data.corpus.row(by_predicate=pl.col("doc_id") == "1") == (
        "1", f"{one['title']} {one['plain']}", one["title"]
    )  # fmt: skip
    judged = set(zip(data.qrels["query_id"], data.qrels["doc_id"], strict=True))
    for q, pos, neg in data.triples.select("query_id", "pos_doc_id", "neg_doc_id").rows():
        assert (q, pos) in judged and (q, neg) not in judged
    train = set(data.queries.filter(pl.col("split") == "train")["query_id"])
    assert set(data.triples["query_id"]) == train
    align = {
        (d, g): w
        for d, dim, g, w in data.alignments.filter(pl.col("doc_id").is_in(["3", "6"])).rows()
        if dim == "page_subcont_regions"
    }
    assert align == {("3", "Unknown"): 1.0, ("6", "Eastern Asia"): 1.0}
    nometa = data.alignments.filter(pl.col("doc_id") == miniature.trec_fair.no_metadata)
    assert nometa["group"].to_list() == ["Unknown", "Unknown"]


def test_sampling_keeps_every_judgement_of_the_sampled_docs(
    miniature: Miniature, no_network: NoNetwork
) -> None:
    cfg = TrecFairConfig(docs_per_query=3, max_queries=4, seed=0)
    data = extract_trec_fair(cfg)
    assert data.queries["query_id"].to_list() == ["1", "2", "3", "10"]  # numeric id order
    assert data.corpus.height <= 12
    docs = set(data.corpus["doc_id"])
    assert set(data.qrels["doc_id"]) == docs
    per_query = data.qrels.group_by("query_id").len()["len"]
    assert per_query.max() > 3  # type: ignore[operator]  # a doc sampled under a neighbour
    again = extract_trec_fair(cfg)
    assert again.corpus.equals(data.corpus) and again.alignments.equals(data.alignments)
    qrels = pl.DataFrame({"query_id": ["a"] * 5, "doc_id": list("vwxyz"), "relevance": [1] * 5})
    assert sample_qrels(qrels, 2, 3).height == 2


def test_unknown_dimension_lists_the_real_fields(
    miniature: Miniature, no_network: NoNetwork
) -> None:
    cfg = TrecFairConfig(dimensions=("gender_category", "race"))
    with pytest.raises(ValueError, match=r"\['race'\] are not FairTrec2022Doc metadata fields.*"):
        extract_trec_fair(cfg)


def test_offline_fails_at_once_with_commands_that_fetch_no_docstore(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    with pytest.raises(irds.SourceUnavailableError) as error:
        extract_trec_fair(TrecFairConfig(), probe=lambda host: "no route to host")
    message = str(error.value)
    assert "ir_datasets export trec-fair/2022/train queries > /dev/null" in message
    assert "export trec-fair/2022/train docs" not in message  # it would build the docstore
    corpus = tmp_path / "trec-fair" / "2022" / "trec_corpus_20220301_plain.json.gz"
    assert f"curl -fL --create-dirs -o {corpus} https://data.boisestate.edu/" in message
    assert "trec_corpus_20220301_plain.json.gz 7.68 GB, md5 5466119794" in message


def test_the_id_filter_finds_the_key_wherever_it_is(tmp_path: Path) -> None:
    """Ids after a long field, cut by the head window, or quoted; ids in the text don't count."""
    lines = [
        {"id": 1, "plain": 'a quoted \\"id\\": 2 in the text'},
        {"title": "x" * 200, "id": 3},
        {"title": "y" * (HEAD - len('{"title": "", "id": 44')), "id": 4444},  # cut at HEAD
        {"id": "5", "plain": "a string id"},
        {"id": 2, "plain": "the real 2"},
    ]
    path = tmp_path / "c.json.gz"
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in lines)
    assert json.dumps(lines[2]).encode().index(b"4444") < HEAD < len(json.dumps(lines[2]))
    got = [r["id"] for r in _records(path, "id", {"2", "3", "4444", "5"}, "test")]
    assert got == [3, 4444, "5", 2]
