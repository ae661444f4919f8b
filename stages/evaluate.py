"""Stage `evaluate@<method>`: effectiveness and fairness metrics of the method's run.

Writes `eval/<method>/per_query.parquet` + `metrics.json` and `metrics/<method>.json` (flat
keys such as `MRR@10`, for `dvc metrics diff`). With `train.seeds`, one `eval/<method>/seed-<n>/`
folder per seed, and the method's metrics are the means over seeds, with their standard
deviations under `std` and the seeds under `seeds`.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline import io, schemas
from pipeline.metrics import METRICS, EvalInputs
from pipeline.metrics.exposure import awrf_alignments, expected_exposure, intersect
from pipeline.metrics.suite import aggregate as aggregate_metrics
from pipeline.metrics.suite import evaluate
from pipeline.params import FIRST_STAGE, EvaluateParams, get_method
from pipeline.report.significance import mean_std
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


@dataclass(frozen=True)
class _Shared:
    """What every run of the stage is evaluated against."""

    qrels: pl.DataFrame
    doc_scores: pl.DataFrame
    candidates: pl.DataFrame
    groups: pl.DataFrame | None
    alignments: pl.DataFrame


def _shared() -> _Shared:
    corpus = io.read_table("data/corpus.parquet", schemas.CORPUS)
    groups = None
    if "group" in corpus.columns:
        # Documents labelled `both` have no single F/M/N alignment and are dropped from AWRF.
        groups = corpus.select("doc_id", "group").filter(pl.col("group").is_in(AWRF_GROUPS))
    return _Shared(
        qrels=io.read_table("data/qrels.parquet", schemas.QRELS),
        doc_scores=io.read_table("data/doc_scores.parquet", schemas.DOC_SCORES),
        candidates=io.read_table("data/candidates.parquet", schemas.CANDIDATES),
        groups=groups,
        alignments=io.read_table("data/alignments.parquet", schemas.ALIGNMENTS),
    )


def evaluate_run(
    run: pl.DataFrame, s: _Shared, p: EvaluateParams
) -> tuple[dict[str, float], pl.DataFrame]:
    """``(aggregates, per-query metrics)`` of one run."""
    qrels = s.qrels.filter(pl.col("query_id").is_in(run["query_id"].unique().implode()))
    inputs = EvalInputs(
        run=run,
        qrels=qrels,
        doc_scores=s.doc_scores,
        candidates=s.candidates,
        doc_groups=s.groups,
        awrf_target="relevant" if p.awrf_target == "relevant" else "uniform",
    )
    # Multi-dimensional group alignments (TREC Fair 2022): intersectional AWRF and expected
    # exposure replace the single-label F/M/N families, which are then not run at all.
    aligned_data = s.alignments.height > 0
    families = [f for f in METRICS if not (aligned_data and f in ALIGNED_FAMILIES)]
    aggregate, per_query = evaluate(inputs, metrics=families, cutoffs=tuple(p.cutoffs))
    if aligned_data:
        aligned = intersect(s.alignments)
        extra = awrf_alignments(run, aligned, p.cutoffs, p.awrf_target, qrels).join(
            expected_exposure(run, qrels, aligned), on="query_id", how="left"
        )
        per_query = per_query.join(extra, on="query_id", how="left")
        aggregate = aggregate_metrics(per_query)
    return aggregate, per_query


def over_seeds(per_seed: Mapping[int, Mapping[str, float]]) -> dict[str, Any]:
    """Mean over seeds of each aggregate every seed has, ``std`` (ddof 1) of each, ``seeds``."""
    keys = [k for k in next(iter(per_seed.values())) if all(k in a for a in per_seed.values())]
    spread = {k: mean_std([float(a[k]) for a in per_seed.values()]) for k in keys}
    mean = {k: m for k, (m, _) in spread.items()}
    std = {k: s if s is not None else 0.0 for k, (_, s) in spread.items()}
    return {**mean, "std": std, "seeds": list(per_seed)}


def _write(per_query: pl.DataFrame, result: Mapping[str, Any], folder: Path) -> None:
    table = per_query.to_arrow()
    schema = schemas.keyed_schema("per-query metrics", table, "query_id")
    io.write_table(table, str(folder / "per_query.parquet"), schema)
    io.write_json(dict(result), str(folder / "metrics.json"))


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True, extra=_args)
    p = ns.params.evaluate
    shared = _shared()
    if ns.first_stage:
        runs = [(0, "", shared.candidates.select("query_id", "doc_id", "score", "rank"))]
    else:
        get_method(ns.params, ns.method)
        runs = [
            (
                seed,
                sub,
                io.read_table(str(Path("runs", ns.method, sub, "run.parquet")), schemas.RUN),
            )
            for seed, sub in ns.params.train.seed_runs()
        ]
    ds = shared.doc_scores
    info = {
        "method": ns.method,
        "tokenizer": ds["tokenizer"][0] if ds.height else "",
        "lexicon": ds["lexicon"][0] if ds.height else "",
    }
    per_seed: dict[int, dict[str, float]] = {}
    for seed, sub, run in runs:
        aggregate, per_query = evaluate_run(run, shared, p)
        per_seed[seed] = aggregate
        _write(per_query, {**aggregate, **info}, Path("eval", ns.method, sub))
    several = runs[0][1] != ""  # seed-<n>/ folders: train.seeds is set
    result = {**(over_seeds(per_seed) if several else aggregate), **info}
    if several:
        io.write_json(result, f"eval/{ns.method}/metrics.json")
    io.write_json(result, f"metrics/{ns.method}.json")
    log.info(
        "evaluate@%s: %d run(s); %s",
        ns.method,
        len(runs),
        ", ".join(f"{k} {v:.4f}" for k, v in result.items() if k.endswith("@10")),
    )


if __name__ == "__main__":
    run_stage(main)
