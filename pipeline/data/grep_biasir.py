"""Grep-BiasIR (Krieg et al., CHIIR 2023; CC0): the embedded offline default collection.

117 gender-neutral queries in 7 categories; each query has one relevant and one non-relevant
document, each written in a female, a male and a neutral version (702 documents). We turn it
into the pipeline's corpus / queries / qrels / triples tables.
"""

from __future__ import annotations

import csv
import functools
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import polars as pl

from pipeline.config import Checked, ParamsError, Range
from pipeline.data.common import USABLE, Extracted, Source, check_texts
from pipeline.errors import InputError
from pipeline.manifest import verify
from pipeline.retrieval.bm25 import bm25_topk
from pipeline.schemas import ASSIGNMENT

log = logging.getLogger(__name__)

RESOURCE_DIR = Path(__file__).resolve().parent.parent / "resources" / "grep_biasir"
QUERY_FIELDS = ("q_id", "category", "query")
DOC_FIELDS = (
    "q_id", "d_id", "relevant", "query", "doc_title", "document", "content_gender",
    "exp_stereotype",
)  # fmt: skip
GENDERS = ("F", "M", "N", "both")
# The published CSVs label 5 documents that mention both genders `both`, one misspelt.
GENDER_FIXES = {"botrh": "both"}


class GrepBiasIRError(InputError):
    """A Grep-BiasIR CSV file is missing or has a malformed row."""


@dataclass(frozen=True)
class GrepBiasIR:
    corpus: pl.DataFrame
    queries: pl.DataFrame
    qrels: pl.DataFrame


def _read_rows(path: Path, fields: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    if not path.exists():
        raise GrepBiasIRError(
            f"{path}: Grep-BiasIR file not found; reinstall the package or restore "
            "pipeline/resources/grep_biasir/ from git"
        )
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != fields:
            raise GrepBiasIRError(f"{path}: header {header} is not the expected {list(fields)}")
        rows = []
        for row in reader:
            if len(row) != len(fields):
                raise GrepBiasIRError(
                    f"{path}, line {reader.line_num}: expected {len(fields)} fields "
                    f"{list(fields)}, got {len(row)}: {row[:3]}…; fix the quoting of that row"
                )
            rows.append((reader.line_num, dict(zip(fields, row, strict=True))))
    if not _ends_with_newline(path):
        raise GrepBiasIRError(
            f"{path}, line {rows[-1][0] if rows else 1}: the last line has no line end, so "
            "the file is probably truncated; restore pipeline/resources/grep_biasir/ from git"
        )
    return rows


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        if f.seek(0, os.SEEK_END) == 0:
            return True
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _check_unique_queries(path: Path, rows: list[tuple[int, dict[str, str]]]) -> None:
    first: dict[str, int] = {}
    for line, row in rows:
        if row["q_id"] in first:
            raise GrepBiasIRError(
                f"{path}, line {line}: duplicate q_id {row['q_id']!r} (first on line "
                f"{first[row['q_id']]}); give every query its own q_id"
            )
        first[row["q_id"]] = line


def _check_doc_row(path: Path, line: int, row: dict[str, str], query_ids: set[str]) -> None:
    row["content_gender"] = GENDER_FIXES.get(row["content_gender"], row["content_gender"])
    problems = []
    if row["q_id"] not in query_ids:
        problems.append(f"q_id {row['q_id']!r} is not in queries.csv")
    if row["relevant"] not in ("0", "1"):
        problems.append(f"relevant must be 0 or 1, got {row['relevant']!r}")
    if row["content_gender"] not in GENDERS:
        problems.append(f"content_gender must be one of {GENDERS}, got {row['content_gender']!r}")
    if not row["d_id"].strip():
        problems.append("empty d_id")
    if not re.search(USABLE, row["document"]):
        problems.append(
            f"document {row['d_id']!r} has no usable text (no letter or digit): "
            f"{row['document'][:40]!r}; give it a text with at least one word"
        )
    if problems:
        raise GrepBiasIRError(f"{path}, line {line}: " + "; ".join(problems))


def load_grep_biasir(root: Path = RESOURCE_DIR) -> GrepBiasIR:
    """Read and validate the shipped CSVs. Document text = title + ' ' + body."""
    qrows = _read_rows(root / "queries.csv", QUERY_FIELDS)
    _check_unique_queries(root / "queries.csv", qrows)
    queries = pl.DataFrame(
        {
            "query_id": [r["q_id"] for _, r in qrows],
            "text": [r["query"].strip() for _, r in qrows],
            "category": [r["category"].strip() for _, r in qrows],
        }
    )
    check_texts(queries, "query_id", "queries", str(root / "queries.csv"))
    qids = set(queries["query_id"])
    docs: dict[str, dict[str, str]] = {}
    qrels: list[tuple[str, str, int]] = []
    files = sorted(root.glob("queries-documents_*.csv"))
    if not files:
        raise GrepBiasIRError(f"{root}: no queries-documents_*.csv files found")
    for path in files:
        for line, row in _read_rows(path, DOC_FIELDS):
            _check_doc_row(path, line, row, qids)
            if row["d_id"] in docs:
                raise GrepBiasIRError(f"{path}, line {line}: duplicate d_id {row['d_id']!r}")
            docs[row["d_id"]] = row
            qrels.append((row["q_id"], row["d_id"], int(row["relevant"])))
    corpus = pl.DataFrame(
        {
            "doc_id": list(docs),
            "text": [f"{r['doc_title'].strip()} {r['document'].strip()}" for r in docs.values()],
            "title": [r["doc_title"].strip() for r in docs.values()],
            "group": [r["content_gender"] for r in docs.values()],
        }
    )
    qrels_df = pl.DataFrame(
        qrels, schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "relevance": pl.Int64}, orient="row"
    )
    return GrepBiasIR(corpus, queries, qrels_df)


def subset_queries(data: GrepBiasIR, n: int) -> GrepBiasIR:
    """The first `n` queries by id, with their documents.

    Used by small test profiles; documents of dropped queries leave the corpus too.
    """
    keep = sorted(data.queries["query_id"].to_list(), key=_id_key)[:n]
    qrels = data.qrels.filter(pl.col("query_id").is_in(keep))
    return GrepBiasIR(
        data.corpus.filter(pl.col("doc_id").is_in(qrels["doc_id"].implode())),
        data.queries.filter(pl.col("query_id").is_in(keep)),
        qrels,
    )


def split_queries(queries: pl.DataFrame, test_fraction: float, seed: int) -> pl.DataFrame:
    """Add `split` (train/test): a seeded split stratified by `category`.

    Each category contributes round(n × test_fraction) test queries (at least one when the
    fraction is positive and the category has two or more queries).
    """
    rng = np.random.default_rng(seed)
    test: set[str] = set()
    for cat in sorted(queries["category"].unique().to_list()):
        ids = sorted(queries.filter(pl.col("category") == cat)["query_id"].to_list(), key=_id_key)
        n_test = round(len(ids) * test_fraction)
        if test_fraction > 0 and len(ids) > 1:
            n_test = min(max(n_test, 1), len(ids) - 1)
        test.update(rng.permutation(np.array(ids, dtype=object))[:n_test].tolist())
    split = pl.when(pl.col("query_id").is_in(sorted(test))).then(pl.lit("test"))
    return queries.with_columns(split.otherwise(pl.lit("train")).alias("split"))


def assign_folds(queries: pl.DataFrame, folds: int, seed: int) -> pl.DataFrame:
    """Add ``fold`` (0..folds-1) and ``split = test``: k-fold cross-validation over queries
    (SPEC §7), stratified by ``category`` and seeded. Each category's queries are permuted and
    dealt to the folds in turn, continuing where the previous category stopped, so fold sizes
    differ by at most one and every fold holds every category's share."""
    if folds < 2 or folds > queries.height:
        raise InputError(
            f"params key 'dataset.grep_biasir.folds': {folds} folds need 2..{queries.height} "
            "queries"
        )
    rng = np.random.default_rng(seed)
    fold_of: dict[str, int] = {}
    turn = 0
    for cat in sorted(queries["category"].unique().to_list()):
        ids = sorted(queries.filter(pl.col("category") == cat)["query_id"].to_list(), key=_id_key)
        for qid in rng.permutation(np.array(ids, dtype=object)).tolist():
            fold_of[qid] = turn % folds
            turn += 1
    fold = pl.col("query_id").replace_strict(fold_of, return_dtype=pl.Int64)
    return queries.with_columns(pl.lit("test").alias("split"), fold.alias("fold"))


def split_documents(data: GrepBiasIR, queries: pl.DataFrame) -> pl.DataFrame:
    """The corpus with the ``split`` and ``fold`` of each document's query.

    Each Grep-BiasIR document belongs to exactly one query. Decision (deviates from SPEC §7's
    "BM25 over the whole corpus"): test queries rerank only their fold's test documents, and
    BM25 negatives come only from training documents. Otherwise a trained model meets the
    relevant documents of the training queries among a test query's candidates and ranks
    them first whatever the query (it memorises documents).
    """
    cols = ["query_id", "split", *(["fold"] if "fold" in queries.columns else [])]
    doc_split = data.qrels.join(queries.select(cols), on="query_id").drop("query_id", "relevance")
    return data.corpus.join(doc_split.unique("doc_id"), on="doc_id", how="left").select(
        *data.corpus.columns, *cols[1:]
    )


def _id_key(x: str) -> tuple[int, str]:
    return (int(x), x) if x.isdigit() else (1 << 62, x)


def make_triples(
    data: GrepBiasIR, train_ids: list[str], bm25_negatives: int, bm25_pool: int
) -> pl.DataFrame:
    """Training triples for the train queries.

    Each relevant document (3 gender versions) is paired with each of the query's
    non-relevant documents (`source = same_query`) and with every document of the query's
    BM25 top-`bm25_pool` among *other training* queries' documents (`source = bm25`), of
    which training keeps `draw = bm25_negatives` per query, the same for its F/M/N
    positives, drawn with the run's seed by the order stage
    (`pipeline.ordering.draw_negatives`), so each seed trains on its own sampled negatives;
    test documents never appear in training.
    """
    qrels = data.qrels.filter(pl.col("query_id").is_in(train_ids))
    rel = qrels.filter(pl.col("relevance") > 0)
    nonrel = qrels.filter(pl.col("relevance") == 0)
    same = rel.join(nonrel, on="query_id", suffix="_neg").select(
        "query_id",
        pl.col("doc_id").alias("pos_doc_id"),
        pl.col("doc_id_neg").alias("neg_doc_id"),
        pl.lit("same_query").alias("source"),
        pl.lit(None, dtype=pl.Int64).alias("draw"),
    )
    if bm25_negatives == 0:
        return same.drop("draw").sort("query_id", "pos_doc_id", "neg_doc_id")
    queries = data.queries.filter(pl.col("query_id").is_in(train_ids))
    own = data.qrels.select("query_id", "doc_id", pl.lit(True).alias("own"))
    train_docs = data.corpus.filter(pl.col("doc_id").is_in(qrels["doc_id"].implode()))
    pool = (
        bm25_topk(train_docs, queries, k=bm25_pool + 6)
        .join(own, on=["query_id", "doc_id"], how="left")
        .filter(pl.col("own").is_null())
        .sort("query_id", "rank")
        .group_by("query_id", maintain_order=True)
        .head(bm25_pool)
        .select("query_id", pl.col("doc_id").alias("neg_doc_id"))
    )
    bm25 = rel.select("query_id", pl.col("doc_id").alias("pos_doc_id")).join(
        pool, on="query_id"
    ).with_columns(pl.lit("bm25").alias("source"), pl.lit(bm25_negatives, pl.Int64).alias("draw"))
    return pl.concat([same, bm25.select(same.columns)]).sort(
        "query_id", "pos_doc_id", "source", "neg_doc_id"
    )


@dataclass(frozen=True)
class GrepBiasIRConfig(Checked):
    """``dataset.grep_biasir``: ``folds``-fold cross-validation over queries (``1`` = one
    split holding out ``test_fraction`` of each category's queries), seeded by
    ``split_seed``; ``bm25_negatives`` per query drawn (by each run seed, in the order stage)
    from its BM25 top-``bm25_pool`` documents of other training queries;
    ``max_queries``: the first N query ids (small profiles), ``None`` = all 117;
    ``splits``: how many k-fold assignments are drawn (seeded ``split_seed``,
    ``split_seed + 1``, …); the i-th of ``train.seeds`` uses assignment ``i mod splits``, so
    ``splits`` = the number of seeds gives every seed its own fold split (issue 29)."""

    folds: Annotated[int, Range(ge=1)] = 2
    test_fraction: Annotated[float, Range(ge=0, le=1)] = 0.3
    split_seed: int = 13
    bm25_negatives: Annotated[int, Range(ge=0)] = 2
    bm25_pool: Annotated[int, Range(ge=1)] = 10
    max_queries: Annotated[int, Range(ge=2)] | None = None
    splits: Annotated[int, Range(ge=1)] = 1

    def __post_init__(self) -> None:
        """The ranges that depend on each other and on the shipped data, checked where params
        load (the ``params`` stage), before DVC removes any output (issue 43)."""
        super().__post_init__()
        if self.splits > 1 and self.folds < 2:
            raise ParamsError(
                f"params key 'splits': {self.splits} fold assignments need k-fold "
                f"cross-validation; set folds to 2 or more (not {self.folds}), or splits to 1"
            )
        if self.folds == 1 and self.test_fraction == 0:
            raise ParamsError(
                "params key 'test_fraction': 0 holds out no query, so folds: 1 has nothing to "
                "evaluate; set test_fraction in (0, 1] (default 0.3), or folds to 2 or more"
            )
        shipped = shipped_query_count()
        n = shipped if self.max_queries is None else min(self.max_queries, shipped)
        if shipped and self.folds > n:
            used = f"max_queries {self.max_queries} of the " if n < shipped else "all "
            raise ParamsError(
                f"params key 'folds': {self.folds} folds need at least {self.folds} queries, and "
                f"there are {n} ({used}{shipped} shipped Grep-BiasIR queries); set folds to "
                f"1..{n}" + ("" if n == shipped else f", or raise max_queries to {self.folds}")
            )


@functools.cache
def shipped_query_count(root: Path = RESOURCE_DIR) -> int:
    """The number of queries in the shipped ``queries.csv`` (0 when it is missing or malformed:
    the extract stage then names the file and the fix)."""
    try:
        return len(_read_rows(root / "queries.csv", QUERY_FIELDS))
    except GrepBiasIRError:
        return 0


def extract(cfg: GrepBiasIRConfig) -> Extracted:
    """Grep-BiasIR (Krieg et al., SIGIR 2022; CC0, shipped): queries with ``fold`` and
    ``split``, the corpus split with its queries, qrels, and per fold the triples of the other
    folds' queries (``fold`` = the fold whose model trains on them). With ``splits`` > 1,
    assignment ``a`` (seeded ``split_seed + a``) numbers its folds ``a·folds + f``: the
    triples carry ``assignment``, the ``folds`` table every query's fold in each, and the
    queries and corpus keep assignment 0's fold (the one ``splits: 1`` draws). The shipped
    files are checked against their manifest first (``pipeline/manifest.py``)."""
    verify(RESOURCE_DIR, "Grep-BiasIR")
    data = load_grep_biasir()
    if cfg.max_queries is not None:
        data = subset_queries(data, cfg.max_queries)
    drawn = [_queries(data, cfg, cfg.split_seed + a) for a in range(cfg.splits)]
    queries = drawn[0]
    parts, folds, k = [], [], max(cfg.folds, 1)
    for a, assigned in enumerate(drawn):
        tag = pl.lit(a, pl.Int64).alias(ASSIGNMENT)
        folds.append(assigned.select("query_id", tag, pl.col("fold") + a * k).drop_nulls("fold"))
        for fold in range(k):
            train = assigned.filter(pl.col("fold").ne_missing(fold))["query_id"].to_list()
            t = make_triples(data, train, cfg.bm25_negatives, cfg.bm25_pool)
            parts.append(t.with_columns(pl.lit(a * k + fold, pl.Int64).alias("fold"), tag))
    triples = pl.concat(parts)
    if cfg.splits == 1:  # one assignment: the tables as before fold assignments were drawn
        triples = triples.drop(ASSIGNMENT)
    corpus = split_documents(data, queries)
    return Extracted(corpus, queries, data.qrels, triples, folds=pl.concat(folds))


def _queries(data: GrepBiasIR, cfg: GrepBiasIRConfig, seed: int) -> pl.DataFrame:
    """The queries with ``fold`` (k-fold, or 0 = the test side of one split) and ``set``."""
    if cfg.folds > 1:
        queries = assign_folds(data.queries, cfg.folds, seed)
    else:
        queries = split_queries(data.queries, cfg.test_fraction, seed)
        test = pl.col("split") == "test"  # an Int64 literal: the schema's type (issue 43)
        fold = pl.when(test).then(pl.lit(0, pl.Int64)).otherwise(pl.lit(None, pl.Int64))
        queries = queries.with_columns(fold.alias("fold"))
    return queries.with_columns(pl.lit("grep-biasir").alias("set"))


SATURATED = {
    "AWRF": "every Grep-BiasIR document comes in F, M and N versions, so any ranking "
    "exposes the three groups almost equally (AWRF@10 0.985–0.997 for every row) and "
    "AWRF moves opposite to NFaiRR by construction: a method that ranks the neutral "
    "version first lowers it",
}
"""Metrics this collection saturates by its construction (issue 21): shown, without †."""
RECORD = Source("grep-biasir", extract, GrepBiasIRConfig, saturated=SATURATED)
