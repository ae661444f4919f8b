"""The evaluate stage's work: every metric family on a method's runs, and the mean over seeds.

``read_shared()`` reads what every run is evaluated against (qrels, Ψ/ζ scores, candidates,
F/M/N groups, TREC Fair alignments, query complexity), ``read_runs`` a method's runs;
``evaluate_run`` runs the suite on one run; ``over_seeds`` averages a method's per-seed
aggregates (mean ± std, SPEC §4.8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline import io, paths, schemas
from pipeline.metrics import EvalInputs
from pipeline.metrics.inputs import intersect, labelled_groups
from pipeline.metrics.suite import aggregate as aggregate_metrics
from pipeline.metrics.suite import evaluate
from pipeline.metrics.trec_fair2022 import trec_fair_metrics
from pipeline.params import EvaluateParams
from pipeline.stats import mean_std

TREC_FAIR = "trec-fair-2022"  # SPEC §4.6 "TREC Fair 2022 mode": the track's metrics too


@dataclass(frozen=True)
class Shared:
    """What every run of a method is evaluated against."""

    qrels: pl.DataFrame
    doc_scores: pl.DataFrame
    candidates: pl.DataFrame
    groups: pl.DataFrame | None
    alignments: pl.DataFrame
    complexity: pl.DataFrame


def read_shared(data: str | Path = paths.DATA) -> Shared:
    """The shared inputs from the pipeline's ``data/`` tables (validated by ``schemas``)."""
    d = Path(data)
    groups = None
    # the corpus is read only for its F/M/N groups (Grep-BiasIR): at MS MARCO scale (no
    # groups) its texts are gigabytes that no metric reads
    if "group" in io.parquet_columns(d / "corpus.parquet"):
        corpus = io.read_table(str(d / "corpus.parquet"), schemas.CORPUS)
        # Documents labelled `both` have no single F/M/N alignment and are dropped from AWRF.
        groups = labelled_groups(corpus, str(d / "corpus.parquet"))
    return Shared(
        qrels=io.read_table(str(d / "qrels.parquet"), schemas.QRELS),
        doc_scores=io.read_table(str(d / "doc_scores.parquet"), schemas.DOC_SCORES),
        candidates=io.read_table(str(d / "candidates.parquet"), schemas.CANDIDATES),
        groups=groups,
        alignments=io.read_table(str(d / "alignments.parquet"), schemas.ALIGNMENTS),
        complexity=io.read_table(str(d / "query_complexity.parquet"), schemas.QUERY_COMPLEXITY),
    )


def read_runs(
    method: str, seed_runs: Sequence[tuple[int, str]], shared: Shared, first_stage: bool = False
) -> list[tuple[int, str, pl.DataFrame]]:
    """``(seed, seed folder, run)`` of each run to evaluate: the BM25 candidates themselves
    (``first_stage``), or ``runs/<method>/<seed folder>/run.parquet`` per ``seed_runs``
    (``Params.seed_runs_of(method)``)."""
    if first_stage:
        return [(0, "", shared.candidates.select("query_id", "doc_id", "score", "rank"))]
    runs = [(seed, sub, paths.runs(method, sub) / "run.parquet") for seed, sub in seed_runs]
    return [(seed, sub, io.read_table(str(path), schemas.RUN)) for seed, sub, path in runs]


def evaluate_run(
    run: pl.DataFrame, s: Shared, p: EvaluateParams, trec_fair: bool = False
) -> tuple[dict[str, float], pl.DataFrame]:
    """``(aggregates, per-query metrics)`` of one run; with `trec_fair`, also the TREC Fair 2022
    track's own metrics (`trecfair.*`, pipeline/metrics/trec_fair2022.py)."""
    qrels = s.qrels.filter(pl.col("query_id").is_in(run["query_id"].unique().implode()))
    # Multi-dimensional group alignments (TREC Fair 2022): AWRF and expected exposure read
    # their intersection instead of the single F/M/N labels.
    aligned = intersect(s.alignments) if s.alignments.height > 0 else None
    inputs = EvalInputs(
        run=run,
        qrels=qrels,
        doc_scores=s.doc_scores,
        candidates=s.candidates,
        doc_groups=s.groups,
        query_complexity=s.complexity,
        alignments=aligned,
        awrf_target="relevant" if p.awrf_target == "relevant" else "uniform",
        exposure_temperature=p.exposure_temperature,
    )
    aggregate, per_query = evaluate(inputs, cutoffs=tuple(p.cutoffs))
    if trec_fair:
        track = trec_fair_metrics(run, qrels, s.alignments, temperature=p.exposure_temperature)
        per_query = per_query.join(track, on="query_id", how="left")
        aggregate = aggregate_metrics(per_query)
    return aggregate, per_query


def over_seeds(per_seed: Mapping[int, Mapping[str, float]]) -> dict[str, Any]:
    """Mean over seeds of each aggregate every seed has, ``std`` (ddof 1) of each, ``seeds``."""
    keys = [k for k in next(iter(per_seed.values())) if all(k in a for a in per_seed.values())]
    spread = {k: mean_std([float(a[k]) for a in per_seed.values()]) for k in keys}
    mean = {k: m for k, (m, _) in spread.items()}
    std = {k: s if s is not None else 0.0 for k, (_, s) in spread.items()}
    return {**mean, "std": std, "seeds": list(per_seed)}


def run_info(method: str, doc_scores: pl.DataFrame) -> dict[str, str]:
    """The method's name and the tokenizer/lexicon its Ψ/ζ scores were computed with."""
    first = doc_scores.height > 0
    return {
        "method": method,
        "tokenizer": doc_scores["tokenizer"][0] if first else "",
        "lexicon": doc_scores["lexicon"][0] if first else "",
    }


def write_eval(per_query: pl.DataFrame, result: Mapping[str, Any], folder: Path) -> None:
    """``folder/per_query.parquet`` (keyed by query) and ``folder/metrics.json``."""
    table = per_query.to_arrow()
    schema = schemas.keyed_schema("per-query metrics", table, "query_id")
    io.write_table(table, str(folder / "per_query.parquet"), schema)
    io.write_json(dict(result), str(folder / "metrics.json"))
