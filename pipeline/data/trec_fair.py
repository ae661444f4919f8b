"""TREC Fair Ranking 2022 (Ekstrand et al.) through ir_datasets `trec-fair/2022/train`: English
Wikipedia articles with fairness metadata, 50 WikiProject training queries and their
relevant articles (SPEC §7).

The 2022 training qrels hold about 2.1M relevant articles for 50 queries, so the corpus is a
seeded sample of `docs_per_query` relevant articles per query (`None` keeps all); qrels keep
the sampled articles. Train triples pair each sampled relevant article of a train query with
`negatives` corpus articles not relevant to it (checked against the full qrels).

Group alignments (SPEC §4.6) are a tidy frame `doc_id, dimension, group, weight`, one
distribution per document and dimension, from the article's own `FairTrec2022Doc` fields:
a string field is one group; a list field (e.g. `page_subcont_regions`, `gender`) spreads
the weight evenly over its distinct items; a dict field (`source_subcont_regions`) in
proportion to its counts; a missing or empty value is the real group "Unknown".
`pipeline.metrics.inputs.intersect` builds the intersectional (outer-product) groups.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np
import polars as pl

from pipeline.config import Checked, Range
from pipeline.data.common import Extracted, Source
from pipeline.data.irds import (
    Loader,
    Probe,
    batched,
    default_loader,
    guarded,
    preflight,
    probe_host,
)
from pipeline.data.trec_fair_articles import read_articles
from pipeline.errors import InputError
from pipeline.schemas import UNKNOWN_GROUP as UNKNOWN

log = logging.getLogger(__name__)

DATASET_ID = "trec-fair/2022/train"
DEFAULT_DIMENSIONS = ("gender_category", "page_subcont_regions")
NOT_GROUPS = ("doc_id", "title", "text", "url")
ENTITIES = ("queries", "qrels", "docs")


@dataclass(frozen=True)
class TrecFairConfig(Checked):
    """``dataset.trec_fair_2022``: the fairness ``dimensions`` (``FairTrec2022Doc`` fields),
    ``docs_per_query`` sampled relevant articles per query (``None`` = all), the first
    ``max_queries`` queries, ``test_fraction`` of them held out, ``negatives`` per positive,
    ``seed`` of every draw, ``batch_size`` documents per docs-store lookup."""

    folds: ClassVar[int] = 1  # one train/test split of its 50 queries
    dimensions: tuple[str, ...] = DEFAULT_DIMENSIONS
    docs_per_query: Annotated[int, Range(ge=1)] | None = 100
    max_queries: Annotated[int, Range(ge=2)] | None = None
    test_fraction: Annotated[float, Range(ge=0, le=1)] = 0.3
    seed: int = 13
    negatives: Annotated[int, Range(ge=0)] = 2
    batch_size: Annotated[int, Range(ge=1)] = 10_000


@dataclass(frozen=True)
class TrecFair:
    """The extract tables plus the per-dimension alignments."""

    corpus: pl.DataFrame
    queries: pl.DataFrame
    qrels: pl.DataFrame
    triples: pl.DataFrame
    alignments: pl.DataFrame


def check_dimensions(doc_cls: Any, dimensions: Sequence[str]) -> None:
    """Every dimension must be a metadata field of the ir_datasets document class."""
    fields = [f for f in doc_cls._fields if f not in NOT_GROUPS]
    bad = [d for d in dimensions if d not in fields]
    if bad or not dimensions:
        raise InputError(
            f"trec-fair dimensions {list(dimensions)}: {bad or 'none given'} are not "
            f"{doc_cls.__name__} metadata fields; expected some of {fields}. "
            "Fix dataset.trec_fair_2022.dimensions."
        )


def field_distribution(value: Any) -> dict[str, float]:
    """One document's distribution over the groups of one field (see the module docstring)."""
    if isinstance(value, dict):
        counts = {str(k): float(v) for k, v in value.items() if v and float(v) > 0}
        total = sum(counts.values())
        return {k: v / total for k, v in counts.items()} if total else {UNKNOWN: 1.0}
    if isinstance(value, list | tuple | set):
        items = sorted({str(v) for v in value if v is not None and str(v).strip()})
        return dict.fromkeys(items, 1.0 / len(items)) if items else {UNKNOWN: 1.0}
    if value is None or (isinstance(value, str) and not value.strip()):
        return {UNKNOWN: 1.0}
    return {str(value): 1.0}


def doc_alignments(docs: Iterable[Any], dimensions: Sequence[str]) -> pl.DataFrame:
    """`doc_id, dimension, group, weight` rows of `docs` for every dimension."""
    rows = [
        (doc.doc_id, dim, group, weight)
        for doc in docs
        for dim in dimensions
        for group, weight in field_distribution(getattr(doc, dim)).items()
    ]
    return pl.DataFrame(
        rows,
        schema={"doc_id": pl.Utf8, "dimension": pl.Utf8, "group": pl.Utf8, "weight": pl.Float64},
        orient="row",
    )


def split_queries(query_ids: list[str], test_fraction: float, seed: int) -> dict[str, str]:
    """Seeded train/test split (at least one of each when there are two or more queries)."""
    n_test = round(len(query_ids) * test_fraction)
    if len(query_ids) > 1:
        n_test = min(max(n_test, 1), len(query_ids) - 1)
    test = set(np.random.default_rng(seed).permutation(sorted(query_ids))[:n_test].tolist())
    return {q: "test" if q in test else "train" for q in query_ids}


def sample_qrels(qrels: pl.DataFrame, per_query: int | None, seed: int) -> pl.DataFrame:
    """A seeded sample of `per_query` relevant documents of each query (None: all)."""
    qrels = qrels.sort("query_id", "doc_id")
    if per_query is None:
        return qrels
    rng = np.random.default_rng(seed)
    keys = pl.Series("_key", rng.random(qrels.height))
    ranked = qrels.with_columns(keys).with_columns(
        pl.col("_key").rank("ordinal").over("query_id").alias("_r")
    )
    return ranked.filter(pl.col("_r") <= per_query).drop("_key", "_r")


def make_triples(
    qrels: pl.DataFrame, all_qrels: pl.DataFrame, train: list[str], negatives: int, seed: int
) -> pl.DataFrame:
    """Each corpus doc relevant to a train query × `negatives` corpus docs not relevant to it."""
    rng = np.random.default_rng(seed)
    corpus = np.array(sorted(qrels["doc_id"].unique().to_list()), dtype=object)
    # only judgements of corpus docs can remove a negative (2.1M qrels at full size)
    in_corpus = all_qrels.filter(
        pl.col("doc_id").is_in(pl.Series(corpus.tolist(), dtype=pl.Utf8).implode())
    )
    rows: list[tuple[str, str, str]] = []
    for qid in sorted(train):
        judged = in_corpus.filter(pl.col("query_id") == qid)["doc_id"].to_numpy()
        pool = corpus[~np.isin(corpus, judged)]
        positives = qrels.filter(pl.col("query_id") == qid)["doc_id"].to_list()
        if pool.size == 0 or negatives == 0:
            continue
        for pos in positives:
            for neg in rng.choice(pool, size=min(negatives, pool.size), replace=False):
                rows.append((qid, pos, str(neg)))
    schema = {"query_id": pl.Utf8, "pos_doc_id": pl.Utf8, "neg_doc_id": pl.Utf8}
    return pl.DataFrame(rows, schema=schema, orient="row").with_columns(source=pl.lit("qrels"))


def _queries(dataset: Any, cfg: TrecFairConfig) -> pl.DataFrame:
    rows = [(q.query_id, q.text) for q in dataset.queries_iter()]
    queries = pl.DataFrame(rows, schema={"query_id": pl.Utf8, "text": pl.Utf8}, orient="row")
    queries = queries.sort(pl.col("query_id").str.zfill(12))
    if cfg.max_queries is not None:
        queries = queries.head(cfg.max_queries)
    split = split_queries(queries["query_id"].to_list(), cfg.test_fraction, cfg.seed)
    return queries.with_columns(
        split=pl.col("query_id").replace_strict(split), set=pl.lit("trec-fair-2022-train")
    )


def _documents(
    dataset: Any, doc_ids: list[str], cfg: TrecFairConfig
) -> tuple[pl.DataFrame, pl.DataFrame]:
    corpus_parts, align_parts = [], []
    for docs in batched(read_articles(dataset, doc_ids), cfg.batch_size):
        corpus_parts.append(
            pl.DataFrame(
                {
                    "doc_id": [d.doc_id for d in docs],
                    "text": [f"{d.title} {d.text}" for d in docs],
                    "title": [d.title for d in docs],
                },
                schema={"doc_id": pl.Utf8, "text": pl.Utf8, "title": pl.Utf8},
            )
        )
        align_parts.append(doc_alignments(docs, cfg.dimensions))
    if not corpus_parts:
        raise InputError(
            f"{DATASET_ID}: none of the {len(doc_ids)} sampled relevant articles is in the "
            "corpus file; is the ir_datasets download truncated? Delete it and rerun."
        )
    corpus = pl.concat(corpus_parts).sort("doc_id")
    return corpus, pl.concat(align_parts).sort("doc_id", maintain_order=True)


def extract_trec_fair(
    cfg: TrecFairConfig, load: Loader | None = None, probe: Probe = probe_host
) -> TrecFair:
    """Corpus, queries, qrels, triples and alignments of `trec-fair/2022/train`."""
    if load is None:
        preflight([(DATASET_ID, e) for e in ENTITIES], probe)
        load = default_loader()
    with guarded(DATASET_ID, *ENTITIES):
        dataset = load(DATASET_ID)
        check_dimensions(dataset.docs_cls(), cfg.dimensions)
        queries = _queries(dataset, cfg)
        keep = set(queries["query_id"].to_list())
        rows = [
            (q.query_id, q.doc_id, int(q.relevance))
            for q in dataset.qrels_iter()
            if q.query_id in keep
        ]
        schema = {"query_id": pl.Utf8, "doc_id": pl.Utf8, "relevance": pl.Int64}
        all_qrels = pl.DataFrame(rows, schema=schema, orient="row").unique(["query_id", "doc_id"])
        sample = sample_qrels(
            all_qrels.filter(pl.col("relevance") > 0), cfg.docs_per_query, cfg.seed
        )
        corpus, alignments = _documents(dataset, sorted(sample["doc_id"].unique().to_list()), cfg)
    # every judgement of a corpus document, also those sampled under another query
    qrels = all_qrels.filter(pl.col("doc_id").is_in(corpus["doc_id"].implode())).sort(
        "query_id", "doc_id"
    )
    train = queries.filter(pl.col("split") == "train")["query_id"].to_list()
    triples = make_triples(qrels, all_qrels, train, cfg.negatives, cfg.seed)
    log.info(
        "trec-fair: %d queries, %d documents, %d of %d judgements kept, %d triples",
        queries.height, corpus.height, qrels.height, all_qrels.height, triples.height,
    )  # fmt: skip
    return TrecFair(corpus, queries, qrels, triples, alignments)


def extract(cfg: TrecFairConfig) -> Extracted:
    """The TREC Fair 2022 tables with the documents' group alignments."""
    d = extract_trec_fair(cfg)
    return Extracted(d.corpus, d.queries, d.qrels, d.triples, alignments=d.alignments)


def submissions(run: pl.DataFrame, folder: Path, evaluate: Any) -> None:
    """The track's submission files of a run (seed 004 §3.6; Task 2 rankings drawn with the
    ``exposure`` family's temperature, ``evaluate.exposure.temperature``)."""
    from pipeline.data.trec_fair_submission import write_submissions

    exposure = evaluate.settings("exposure")
    write_submissions(run, folder, temperature=exposure.temperature if exposure else 1.0)


RECORD = Source("trec-fair-2022", extract, TrecFairConfig, ir_datasets="trec-fair/2022",
                submissions=submissions)  # fmt: skip
