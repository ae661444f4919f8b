"""MS MARCO passage (Nguyen et al. 2016) through ir_datasets, the papers' training and
evaluation collection (SPEC §7).

- triples: the first `n_triples` of `msmarco-passage/train/triples-small`, or a seeded sample
  of `n_triples` rows (exact size, uniform without replacement: the sorted row indices are
  drawn first, then the stream is skipped through), written in Parquet row groups;
- queries: the training queries the triples use (`split = train`) and the shipped 215 or
  1,765 gender-neutral dev query set (`split = test`);
- qrels: the full dev qrels (`msmarco-passage/dev`) of that query set (none of its queries is
  in dev-small);
- candidates: the shipped BM25 top-200 run of the 215 set (Rekabsaz et al. 2021), or bm25s
  over the whole collection (k1 = 0.9, b = 0.4, top `candidates_k`);
- corpus: the passage texts of every document in the triples and candidates, looked up in
  the ir_datasets docs store in batches.

Every write streams in batches of `batch_size` rows, so memory stays bounded at N = 3M.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import polars as pl
import pyarrow as pa

from pipeline import io, schemas
from pipeline.config import Checked, Range
from pipeline.data.common import Extracted, Source, check_texts
from pipeline.data.irds import (
    Loader,
    Probe,
    batched,
    check_text_encoding,
    default_loader,
    guarded,
    lookup_docs,
    preflight,
    probe_host,
    sample_stream,
    select_rows,
    write_batches,
)
from pipeline.errors import InputError
from pipeline.progress import progress
from pipeline.retrieval.bm25 import bm25_over_docs

log = logging.getLogger(__name__)

TRIPLES_ID = "msmarco-passage/train/triples-small"
DEV_ID = "msmarco-passage/dev"
COLLECTION_ID = "msmarco-passage"
RESOURCES = Path(__file__).resolve().parent.parent / "resources"
QUERY_SETS = {
    "215": RESOURCES / "querysets" / "msmarco_215.tsv",
    "1765": RESOURCES / "querysets" / "msmarco_1765.tsv",
}
SHIPPED_RUNS = {"215": RESOURCES / "runs" / "msmarco_passage_215" / "BM25.run.gz"}
DOCPAIR_FIELDS = ("query_id", "doc_id_a", "doc_id_b")  # ir_datasets GenericDocPair
QuerySet = Literal["215", "1765"]
NEEDS = [
    (DEV_ID, "qrels"),
    (TRIPLES_ID, "docpairs"),
    (TRIPLES_ID, "queries"),
    (COLLECTION_ID, "docs"),
]


@dataclass(frozen=True)
class MsmarcoConfig(Checked):
    """``dataset.msmarco_passage``; see the module docstring. ``candidates = auto`` uses the
    shipped BM25 run where one exists (the 215 set) and bm25s over the collection
    otherwise (``k1``, ``b``, top ``candidates_k``); ``seed`` draws the ``sample``."""

    folds: ClassVar[int] = 1  # MS MARCO has its own dev queries: one split
    n_triples: Annotated[int, Range(ge=1)] = 100_000
    triples_sample: Literal["first", "sample"] = "first"
    seed: int = 13
    query_set: QuerySet = "215"
    candidates: Literal["auto", "shipped", "bm25"] = "auto"
    candidates_k: Annotated[int, Range(ge=1)] = 200
    k1: Annotated[float, Range(ge=0)] = 0.9
    b: Annotated[float, Range(ge=0, le=1)] = 0.4
    batch_size: Annotated[int, Range(ge=1)] = 100_000


def _count(dataset: Any) -> int:
    count = dataset.docpairs_count() if hasattr(dataset, "docpairs_count") else None
    if count is None:
        log.warning("triples: no known row count; counting the stream once (slow)")
        count = sum(1 for _ in dataset.docpairs_iter())
    return int(count)


def iter_triples(dataset: Any, cfg: MsmarcoConfig) -> Iterator[Any]:
    """The configured `GenericDocPair`s (query_id, doc_id_a = positive, doc_id_b = negative)."""
    if cfg.triples_sample == "first":
        return islice(dataset.docpairs_iter(), cfg.n_triples)
    rows = select_rows(_count(dataset), cfg.n_triples, cfg.seed)
    return sample_stream(dataset.docpairs_iter(), rows)


def triples_batches(pairs: Iterable[Any], batch_size: int) -> Iterator[pl.DataFrame]:
    """Batches `query_id, pos_doc_id, neg_doc_id, source` from doc pairs.

    A `GenericDocPair` is the tuple `(query_id, doc_id_a, doc_id_b)`: polars reads the rows
    as they are (no per-row Python work); other pair objects are read by field name.
    """
    bar = progress(desc="triples", unit="triple", mininterval=5.0)
    names = ["query_id", "pos_doc_id", "neg_doc_id"]
    for chunk in batched(pairs, batch_size):
        first = chunk[0]
        rows = (
            chunk
            if isinstance(first, tuple) and getattr(first, "_fields", None) == DOCPAIR_FIELDS
            else [(p.query_id, p.doc_id_a, p.doc_id_b) for p in chunk]
        )
        frame = pl.DataFrame(rows, schema={n: pl.String for n in names}, orient="row")
        bar.update(len(chunk))
        yield frame.with_columns(source=pl.lit("triples-small"))
    bar.close()


def write_triples(load: Loader, cfg: MsmarcoConfig, path: Path) -> int:
    """Stream the configured triples into `path`; return the number written."""
    with guarded(TRIPLES_ID, "docpairs"):
        n = write_batches(
            triples_batches(iter_triples(load(TRIPLES_ID), cfg), cfg.batch_size),
            path,
            schemas.TRIPLES,
        )
    if n < cfg.n_triples:
        log.warning("triples: the stream held only %d of the %d requested", n, cfg.n_triples)
    return n


def load_query_set(name: QuerySet) -> pl.DataFrame:
    """The shipped query set (`query_id, text`; TSV without header)."""
    path = QUERY_SETS[name]
    if not path.exists():
        raise FileNotFoundError(f"{path}: shipped query set missing; restore it from git")
    queries = pl.read_csv(
        path,
        separator="\t",
        has_header=False,
        new_columns=["query_id", "text"],
        schema_overrides={"query_id": pl.Utf8, "text": pl.Utf8},
        quote_char=None,
    )
    check_texts(queries, "query_id", "queries", str(path))
    return queries


def dev_qrels(load: Loader, query_ids: set[str]) -> pl.DataFrame:
    """The dev qrels of `query_ids` (`query_id, doc_id, relevance`; duplicates keep the max)."""
    with guarded(DEV_ID, "qrels"):
        rows = [
            (q.query_id, q.doc_id, int(q.relevance))
            for q in load(DEV_ID).qrels_iter()
            if q.query_id in query_ids
        ]
    schema = {"query_id": pl.Utf8, "doc_id": pl.Utf8, "relevance": pl.Int64}
    qrels = pl.DataFrame(rows, schema=schema, orient="row")
    qrels = qrels.group_by("query_id", "doc_id").agg(pl.col("relevance").max())
    unjudged = len(query_ids - set(qrels["query_id"].to_list()))
    if unjudged:
        log.warning("qrels: %d of %d queries have no dev judgement", unjudged, len(query_ids))
    return qrels.sort("query_id", "doc_id")


def train_queries(load: Loader, query_ids: set[str]) -> pl.DataFrame:
    """Texts of the training queries `query_ids` (streamed from the train query file)."""
    with guarded(TRIPLES_ID, "queries"):
        rows = [
            (q.query_id, q.text) for q in load(TRIPLES_ID).queries_iter() if q.query_id in query_ids
        ]
    found = pl.DataFrame(rows, schema={"query_id": pl.Utf8, "text": pl.Utf8}, orient="row")
    if found.height < len(query_ids):
        raise InputError(
            f"train queries: {len(query_ids) - found.height} triple query ids have no text in "
            f"{TRIPLES_ID}; expected all of them. Delete the ir_datasets cache and rerun."
        )
    return found.with_columns(split=pl.lit("train"), set=pl.lit("msmarco-train"))


def candidates(load: Loader, cfg: MsmarcoConfig, queries: pl.DataFrame) -> pl.DataFrame:
    """`query_id, doc_id, rank, score`: the shipped run (top `candidates_k`) or bm25s."""
    source = cfg.candidates
    if source == "auto":
        source = "shipped" if cfg.query_set in SHIPPED_RUNS else "bm25"
    if source == "shipped":
        if cfg.query_set not in SHIPPED_RUNS:
            raise InputError(
                f"candidates = shipped: no shipped run for query set {cfg.query_set}; "
                f"expected one of {sorted(SHIPPED_RUNS)}. Use candidates = bm25 or auto."
            )
        run = io.read_trec_run(SHIPPED_RUNS[cfg.query_set])
        run = run.filter(pl.col("query_id").is_in(queries["query_id"].implode()))
        return run.filter(pl.col("rank") <= cfg.candidates_k).select(
            "query_id", "doc_id", "rank", "score"
        )
    with guarded(COLLECTION_ID, "docs"):
        dataset = load(COLLECTION_ID)
        docs = ((d.doc_id, d.text) for d in dataset.docs_iter())
        total = dataset.docs_count() if hasattr(dataset, "docs_count") else None
        return bm25_over_docs(docs, queries, cfg.candidates_k, cfg.k1, cfg.b, total)


def write_corpus(load: Loader, doc_ids: list[str], path: Path, batch_size: int) -> int:
    """Passage texts of `doc_ids` (sorted, unique) into `path`, one row group per batch."""
    with guarded(COLLECTION_ID, "docs"):
        store = load(COLLECTION_ID).docs_store()
        batches = (
            pa.table(
                {
                    "doc_id": pa.array([d.doc_id for d in docs], pa.string()),
                    "text": pa.array([d.text for d in docs], pa.string()),
                }
            )
            for docs in lookup_docs(store, doc_ids, batch_size, desc="corpus")
        )
        return write_batches(batches, path, schemas.CORPUS)


def extract_msmarco(
    cfg: MsmarcoConfig,
    out_dir: str | Path,
    load: Loader | None = None,
    probe: Probe = probe_host,
    home: Path | None = None,
) -> dict[str, int]:
    """Write `corpus, queries, qrels, triples, candidates` Parquet files into `out_dir`.

    `load` defaults to `ir_datasets.load` after a quick check that the data is cached or
    downloadable (else `SourceUnavailableError` at once); tests inject fakes. Returns the
    row count of each file.
    """
    if load is None:
        preflight(NEEDS, probe, home)
        check_text_encoding(COLLECTION_ID)
        load = default_loader()
    out = Path(out_dir)
    evaluated = load_query_set(cfg.query_set)
    qrels = dev_qrels(load, set(evaluated["query_id"].to_list()))  # small: fails first
    cands = candidates(load, cfg, evaluated)
    counts = {"triples": write_triples(load, cfg, out / "triples.parquet")}
    triples = pl.scan_parquet(out / "triples.parquet")
    train_ids = triples.select("query_id").unique().collect()["query_id"].to_list()
    queries = pl.concat(
        [
            train_queries(load, set(train_ids)),
            evaluated.with_columns(split=pl.lit("test"), set=pl.lit(f"msmarco-{cfg.query_set}")),
        ]
    ).sort("split", "query_id")
    doc_ids = _needed_docs(triples, cands)
    counts["corpus"] = write_corpus(load, doc_ids, out / "corpus.parquet", cfg.batch_size)
    for name, table, schema in (
        ("queries", queries, schemas.QUERIES),
        ("qrels", qrels, schemas.QRELS),
        ("candidates", cands, schemas.CANDIDATES),
    ):
        io.write_table(table, out / f"{name}.parquet", schema)
        counts[name] = table.height
    log.info("msmarco: %s", ", ".join(f"{k} {v}" for k, v in counts.items()))
    return counts


def _needed_docs(triples: pl.LazyFrame, cands: pl.DataFrame) -> list[str]:
    ids = pl.concat(
        [
            triples.select(pl.col("pos_doc_id").alias("doc_id")).collect(),
            triples.select(pl.col("neg_doc_id").alias("doc_id")).collect(),
            cands.select("doc_id"),
        ]
    )
    return ids.unique()["doc_id"].sort().to_list()


TABLES = {
    "corpus": schemas.CORPUS,
    "queries": schemas.QUERIES,
    "qrels": schemas.QRELS,
    "triples": schemas.TRIPLES,
    "candidates": schemas.CANDIDATES,
}


def msmarco_tables(
    cfg: MsmarcoConfig, load: Loader | None = None, probe: Probe = probe_host
) -> dict[str, pl.DataFrame]:
    """`extract_msmarco` into a temporary folder, read back as frames (the `SOURCES` contract;
    the stage may call `extract_msmarco` on `data/` directly to skip the round trip)."""
    with tempfile.TemporaryDirectory(prefix="msmarco-") as tmp:
        extract_msmarco(cfg, tmp, load, probe)
        return {name: io.read_table(Path(tmp) / f"{name}.parquet", s) for name, s in TABLES.items()}


def extract(cfg: MsmarcoConfig) -> Extracted:
    """The MS MARCO tables (module docstring); its shipped or bm25s candidates as the first
    stage."""
    t = msmarco_tables(cfg)
    return Extracted(
        t["corpus"], t["queries"], t["qrels"], t["triples"], first_stage=t["candidates"]
    )


RECORD = Source("msmarco-passage", extract, MsmarcoConfig, ir_datasets=DEV_ID)
