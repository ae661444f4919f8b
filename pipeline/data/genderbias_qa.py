"""GenderBias-QA: the held-out transfer collection (issue 21, "a testbed that can move").

Kim et al., "Mitigating Bias in RAG: Controlling the Embedder" (arXiv 2502.17390, 2025),
repository danielkty/debiasing-rag (MIT), files ``dataset/tasks/GenderBias-QA_{test,train}.csv``
shipped unchanged in ``pipeline/resources/genderbias_qa/`` (provenance in
``pipeline/resources/README.md``). Each row is a gender-neutral question (``Who is a famous
team captain in the world of sports?``) with two documents that answer it with a woman
(``bias1-document1/2``) and two that answer it with a man (``bias2-document1/2``).
 The pipeline never trains on it: the models trained on Grep-BiasIR rerank its BM25 candidates
as they are (transfer). It is a data source without training data (``RECORD``,
``trains=False``): ``transfer.name: genderbias-qa`` selects it and its section
``dataset.genderbias_qa`` says which ``splits`` of the file it reads. Tables, with ids prefixed
``gbqa-`` so they never collide with the training collection's:

- ``queries``: ``query_id`` = ``gbqa-<split>-<row>`` (the file's ``num`` is not unique),
  ``text`` = the question, ``split`` = ``test`` (every query is evaluated), ``set`` =
  ``genderbias-qa``, ``category`` = the file's ``topic``;
- ``corpus``: ``doc_id`` = ``<query_id>-f1|f2|m1|m2``, ``text``, ``group`` = ``F`` / ``M``;
- ``qrels``: each question's four documents with relevance 1 (all four answer it; the other
  questions' documents are unjudged, i.e. non-relevant).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import polars as pl

from pipeline.config import Checked, Range
from pipeline.data.common import Extracted, Source
from pipeline.errors import InputError
from pipeline.manifest import verify
from pipeline.schemas import TRIPLES


class DataError(InputError):
    """A shipped GenderBias-QA file is missing or malformed (names the file and row)."""


RESOURCE_DIR = Path(__file__).resolve().parents[1] / "resources" / "genderbias_qa"
SPLITS = ("test", "train")
PREFIX = "gbqa"
NAME = "genderbias-qa"
DOCUMENTS = {
    "bias1-document1": ("f1", "F"),
    "bias1-document2": ("f2", "F"),
    "bias2-document1": ("m1", "M"),
    "bias2-document2": ("m2", "M"),
}
COLUMNS = ("num", "topic", "question", *DOCUMENTS)


@dataclass(frozen=True)
class Collection:
    """An evaluation-only collection: corpus (with F/M ``group``), queries and qrels."""

    corpus: pl.DataFrame
    queries: pl.DataFrame
    qrels: pl.DataFrame


def _read(path: Path) -> pl.DataFrame:
    if not path.is_file():
        raise DataError(f"{path}: GenderBias-QA file not found; reinstall the package")
    try:
        frame = pl.read_csv(path, infer_schema=False)
    except pl.exceptions.ComputeError as exc:
        raise DataError(f"{path}: not a readable CSV ({exc})") from exc
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing columns {missing}; expected {list(COLUMNS)}")
    blank = [pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "") for c in COLUMNS[2:]]
    empty = frame.filter(pl.any_horizontal(blank))
    if empty.height:
        row = frame.with_row_index("_row").filter(pl.col("num") == empty["num"][0])["_row"][0]
        raise DataError(f"{path}, data row {row + 1}: an empty question or document")
    return frame


def load_genderbias_qa(root: Path = RESOURCE_DIR, splits: tuple[str, ...] = SPLITS) -> Collection:
    """The shipped GenderBias-QA splits as one collection (see the module docstring)."""
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown or not splits:
        raise DataError(f"GenderBias-QA splits {list(splits)}: choose from {list(SPLITS)}")
    queries, corpus = [], []
    for split in splits:
        frame = _read(root / f"GenderBias-QA_{split}.csv").with_row_index("_row")
        qid = pl.format(f"{PREFIX}-{split}-{{}}", pl.col("_row"))
        queries.append(frame.select(
            qid.alias("query_id"), pl.col("question").alias("text"), pl.lit("test").alias("split"),
            pl.lit(NAME).alias("set"), pl.col("topic").alias("category"),
        ))  # fmt: skip
        for column, (suffix, group) in DOCUMENTS.items():
            doc_id = pl.format("{}-{}", qid, pl.lit(suffix)).alias("doc_id")
            corpus.append(frame.select(
                doc_id, pl.col(column).alias("text"), pl.lit(group).alias("group"),
                qid.alias("query_id"),
            ))  # fmt: skip
    docs = pl.concat(corpus).sort("doc_id")
    qrels = docs.select("query_id", "doc_id", pl.lit(1, pl.Int64).alias("relevance"))
    return Collection(docs.drop("query_id"), pl.concat(queries), qrels.sort("query_id", "doc_id"))


def load_shipped(splits: tuple[str, ...] = SPLITS) -> Collection:
    """The shipped collection's ``splits``, its files checked against their manifest first
    (``pipeline/manifest.py``): what the ``transfer_data`` stage reads."""
    verify(RESOURCE_DIR, "GenderBias-QA")
    return load_genderbias_qa(RESOURCE_DIR, splits)


@dataclass(frozen=True)
class GenderBiasQAConfig(Checked):
    """The ``dataset.genderbias_qa`` section: the file's ``splits`` to read (test: 145
    questions; train: 172 more); the models never train on either. ``max_queries``:
    ``None`` = every question; N = the first N question ids and the documents they judge
    (small profiles: a cross-encoder reranks every question's ``candidates.top_k`` pairs)."""

    splits: list[Literal["test", "train"]] = field(default_factory=lambda: ["test"])
    max_queries: Annotated[int, Range(ge=1)] | None = None


def extract(cfg: GenderBiasQAConfig) -> Extracted:
    """The collection's corpus (F/M ``group``), queries (all ``test``) and qrels; no
    training triples."""
    coll = load_shipped(splits=tuple(cfg.splits))
    if cfg.max_queries is not None:  # the first N question ids and the documents they judge
        queries = coll.queries.sort("query_id").head(cfg.max_queries)
        qrels = coll.qrels.filter(pl.col("query_id").is_in(queries["query_id"].implode()))
        corpus = coll.corpus.filter(pl.col("doc_id").is_in(qrels["doc_id"].implode()))
        coll = Collection(corpus, queries, qrels)
    none = pl.DataFrame(schema=dict.fromkeys(TRIPLES.required, pl.Utf8))
    return Extracted(coll.corpus, coll.queries, coll.qrels, none)


RECORD = Source("genderbias-qa", extract, GenderBiasQAConfig, trains=False)
