"""Stage `extract`: dataset source → corpus, queries, qrels, triples Parquet (+ TREC qrels)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl
import pyarrow as pa

from pipeline import io, paths, schemas
from pipeline.data import extract
from stages.common import run_stage, setup

log = logging.getLogger("stages.extract")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    dataset = ns.params.dataset
    out = extract(dataset.name, dataset.source)
    io.write_table(out.corpus, paths.CORPUS, schemas.CORPUS)
    io.write_table(out.queries, paths.QUERIES, schemas.QUERIES)
    io.write_table(out.qrels, paths.QRELS, schemas.QRELS)
    io.write_trec_qrels(out.qrels, paths.QRELS_TREC)  # for trec_eval, ir_measures, ranx
    io.write_table(out.triples, paths.TRIPLES, schemas.TRIPLES)
    folds = out.folds if out.folds is not None else _folds(out.queries)
    io.write_table(folds, paths.FOLDS, schemas.FOLDS)
    # Optional tables are always written (empty when the source has none): DVC outputs.
    first = out.first_stage if out.first_stage is not None else _empty(schemas.CANDIDATES)
    io.write_table(first, paths.FIRST_STAGE, schemas.CANDIDATES)
    align = out.alignments if out.alignments is not None else _empty(schemas.ALIGNMENTS)
    io.write_table(align, paths.ALIGNMENTS, schemas.ALIGNMENTS)
    log.info(
        "extract: %d documents, %d queries (%d test), %d qrels, %d triples",
        out.corpus.height,
        out.queries.height,
        out.queries.filter(out.queries["split"] == "test").height,
        out.qrels.height,
        out.triples.height,
    )


def _folds(queries: pl.DataFrame) -> pl.DataFrame:
    """One fold assignment (0): each test query's ``fold``."""
    assignment = pl.lit(0, pl.Int64).alias("assignment")
    return queries.select("query_id", assignment, "fold").drop_nulls("fold")


def _empty(schema: schemas.Schema) -> pa.Table:
    return pa.schema(list(schema.required.items())).empty_table()


if __name__ == "__main__":
    run_stage(main)
