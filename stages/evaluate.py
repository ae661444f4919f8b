"""Stage `evaluate@<method>`: effectiveness and fairness metrics of the method's run."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

import polars as pl

from pipeline import io, schemas
from pipeline.metrics import METRICS, EvalInputs
from pipeline.metrics.exposure import awrf_alignments, expected_exposure, intersect
from pipeline.metrics.suite import aggregate as aggregate_metrics
from pipeline.metrics.suite import evaluate
from pipeline.params import FIRST_STAGE, get_method
from stages.common import run_stage, setup

log = logging.getLogger("stages.evaluate")
AWRF_GROUPS = ("F", "M", "N")
ALIGNED_FAMILIES = ("awrf", "exposure")  # replaced by their alignment-aware versions


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--first-stage",
        action="store_true",
        help=f"evaluate the BM25 candidates themselves as the reference row {FIRST_STAGE!r}",
    )


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True, extra=_args)
    p = ns.params.evaluate
    if ns.first_stage:
        run = io.read_table("data/candidates.parquet", schemas.CANDIDATES)
        run = run.select("query_id", "doc_id", "score", "rank")
    else:
        get_method(ns.params, ns.method)
        run = io.read_table(f"runs/{ns.method}.parquet", schemas.RUN)
    qrels = io.read_table("data/qrels.parquet", schemas.QRELS)
    doc_scores = io.read_table("data/doc_scores.parquet", schemas.DOC_SCORES)
    candidates = io.read_table("data/candidates.parquet", schemas.CANDIDATES)
    corpus = io.read_table("data/corpus.parquet", schemas.CORPUS)
    groups = None
    if "group" in corpus.columns:
        # Documents labelled `both` have no single F/M/N alignment and are dropped from AWRF.
        groups = corpus.select("doc_id", "group").filter(pl.col("group").is_in(AWRF_GROUPS))
    qrels = qrels.filter(pl.col("query_id").is_in(run["query_id"].unique().implode()))
    inputs = EvalInputs(
        run=run,
        qrels=qrels,
        doc_scores=doc_scores,
        candidates=candidates,
        doc_groups=groups,
        awrf_target=p.awrf_target,
    )
    alignments = io.read_table("data/alignments.parquet", schemas.ALIGNMENTS)
    # Multi-dimensional group alignments (TREC Fair 2022): intersectional AWRF and expected
    # exposure replace the single-label F/M/N families, which are then not run at all.
    families = [f for f in METRICS if not (alignments.height and f in ALIGNED_FAMILIES)]
    aggregate, per_query = evaluate(inputs, metrics=families, cutoffs=tuple(p.cutoffs))
    if alignments.height:
        aligned = intersect(alignments)
        extra = awrf_alignments(run, aligned, p.cutoffs, p.awrf_target, qrels).join(
            expected_exposure(run, qrels, aligned), on="query_id", how="left"
        )
        per_query = per_query.join(extra, on="query_id", how="left")
        aggregate = aggregate_metrics(per_query)
    info = {
        "method": ns.method,
        "tokenizer": doc_scores["tokenizer"][0] if doc_scores.height else "",
        "lexicon": doc_scores["lexicon"][0] if doc_scores.height else "",
    }
    result = {**aggregate, **info}
    table = per_query.to_arrow()
    schema = schemas.keyed_schema("per-query metrics", table, "query_id")
    io.write_table(table, f"eval/{ns.method}/per_query.parquet", schema)
    io.write_json(result, f"eval/{ns.method}/metrics.json")
    io.write_json(result, f"metrics/{ns.method}.json")
    log.info(
        "evaluate@%s: %d queries; %s",
        ns.method,
        per_query.height,
        ", ".join(f"{k} {v:.4f}" for k, v in aggregate.items() if k.endswith("@10")),
    )


if __name__ == "__main__":
    run_stage(main)
