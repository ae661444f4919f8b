"""The evaluate stage's work: every metric family on a method's runs, and the mean over seeds.

``read_shared()`` reads what every run is evaluated against (qrels, Ψ/ζ scores, candidates,
F/M/N groups, TREC Fair alignments, query complexity), ``read_runs`` a method's runs;
``evaluate_run`` runs the suite on one run; ``over_seeds`` averages a method's per-seed
aggregates (mean ± std, SPEC §4.8).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline import io, paths, profile, schemas
from pipeline.metrics import EvalInputs
from pipeline.metrics.inputs import intersect
from pipeline.metrics.suite import aggregate as aggregate_metrics
from pipeline.metrics.suite import evaluate
from pipeline.retrieval.folds import for_seed
from pipeline.schemas import labelled_groups
from pipeline.stats import mean_std

if TYPE_CHECKING:
    from pipeline.sections import EvaluateParams


@dataclass(frozen=True)
class Shared:
    """What every run of a method is evaluated against."""

    qrels: pl.DataFrame
    doc_scores: pl.DataFrame
    candidates: pl.DataFrame
    groups: pl.DataFrame | None
    alignments: pl.DataFrame
    complexity: pl.DataFrame | None


def read_shared(data: str | Path = paths.DATA) -> Shared:
    """The shared inputs from the pipeline's ``data/`` tables (validated by ``schemas``)."""
    d = Path(data)
    groups = None
    # the corpus is read only for its F/M/N groups (Grep-BiasIR): at MS MARCO scale (no
    # groups) its texts are gigabytes that no metric reads
    if "group" in io.parquet_columns(d / paths.CORPUS.name):
        corpus = io.read_table(str(d / paths.CORPUS.name), schemas.CORPUS)
        # Documents labelled `both` have no single F/M/N alignment and are dropped from AWRF.
        groups = labelled_groups(corpus, str(d / paths.CORPUS.name))
    return Shared(
        qrels=io.read_table(str(d / paths.QRELS.name), schemas.QRELS),
        doc_scores=io.read_table(str(d / paths.DOC_SCORES.name), schemas.DOC_SCORES),
        candidates=io.read_table(str(d / paths.CANDIDATES.name), schemas.CANDIDATES),
        groups=groups,
        alignments=io.read_table(str(d / paths.ALIGNMENTS.name), schemas.ALIGNMENTS),
        complexity=io.read_table(str(d / paths.QUERY_COMPLEXITY.name), schemas.QUERY_COMPLEXITY),
    )


def read_transfer(data: str | Path = paths.TRANSFER) -> Shared:
    """What a run of the held-out collection is evaluated against (``transfer_data`` stage):
    its qrels, Ψ/ζ scores, BM25 candidates (NFaiRR's background) and F/M groups; no query
    complexity (the variation family is skipped) and no alignments."""
    d = Path(data)
    corpus = io.read_table(str(d / paths.CORPUS.name), schemas.CORPUS)
    return Shared(
        qrels=io.read_table(str(d / paths.QRELS.name), schemas.QRELS),
        doc_scores=io.read_table(str(d / paths.DOC_SCORES.name), schemas.DOC_SCORES),
        candidates=io.read_table(str(d / paths.CANDIDATES.name), schemas.CANDIDATES),
        groups=labelled_groups(corpus, str(d / paths.CORPUS.name)),
        alignments=pl.DataFrame(schema=dict.fromkeys(("doc_id", "dimension", "group"), pl.Utf8)
                                | {"weight": pl.Float64}),
        complexity=None,
    )


FOLD_SEP = "#"


def evaluate_transfer(
    run: pl.DataFrame, s: Shared, p: EvaluateParams
) -> tuple[dict[str, float], pl.DataFrame]:
    """``(aggregates, per-query metrics)`` of a transfer run: every fold model ranked every
    held-out query (column ``fold``); each (query, fold model) list is evaluated in one pass
    of the suite (query ids suffixed ``#<fold>``), then a query's value is its mean over the
    fold models (count columns: the maximum). Without ``fold``: the run as it is."""
    if "fold" not in run.columns:
        return evaluate_run(run, s, p)
    folds = pl.DataFrame({"fold": run["fold"].unique().sort()})

    def expand(frame: pl.DataFrame) -> pl.DataFrame:
        tagged = frame.drop("fold", strict=False).join(folds, how="cross")
        qid = pl.format("{}{}{}", "query_id", pl.lit(FOLD_SEP), "fold").alias("query_id")
        return tagged.with_columns(qid).drop("fold")

    wide = Shared(expand(s.qrels), s.doc_scores, expand(s.candidates), s.groups, s.alignments,
                  None)  # fmt: skip
    run_q = run.with_columns(pl.format("{}{}{}", "query_id", pl.lit(FOLD_SEP), "fold")
                             .alias("query_id")).drop("fold")  # fmt: skip
    _, per_list = evaluate_run(run_q, wide, p)
    base = pl.col("query_id").str.split(FOLD_SEP).list.first().alias("query_id")
    floats = [c for c, t in per_list.schema.items() if t == pl.Float64]
    counts = [c for c, t in per_list.schema.items() if t == pl.Int64]
    per_query = (
        per_list.with_columns(base)
        .group_by("query_id", maintain_order=True)
        .agg(*(pl.col(c).mean() for c in floats), *(pl.col(c).max() for c in counts))
        .sort("query_id")
    )
    return aggregate_metrics(per_query), per_query


TRANSFER = "transfer"  # the held-out collection: eval/<m>/[seed-<n>/]transfer/, keys transfer.*


def prefixed(per_seed: Mapping[int, Mapping[str, float]], prefix: str) -> dict[str, Any]:
    """``per_seed`` aggregates as ``<prefix>.<key>`` (the mean over seeds with several seeds,
    their std under ``std``), the shape of ``metrics/<method>.json``."""
    over = over_seeds(per_seed) if len(per_seed) > 1 else dict(next(iter(per_seed.values())))
    out: dict[str, Any] = {f"{prefix}.{k}": v for k, v in over.items() if k not in ("std", "seeds")}
    std = over.get("std")
    if isinstance(std, Mapping):
        out["std"] = {f"{prefix}.{k}": v for k, v in std.items()}
    return out


def transfer_metrics(
    method: str, seed_runs: Sequence[tuple[int, str]], p: EvaluateParams, first_stage: bool
) -> dict[str, Any]:
    """Evaluate the held-out collection's runs of every seed (the BM25 candidates themselves
    for the ``first_stage`` row) into ``eval/<method>/[seed-<n>/]transfer/``; the mean over
    seeds as ``transfer.<key>`` (and their std under ``std``, with several seeds)."""
    shared = read_transfer()
    seed_runs = [(0, "")] if first_stage else seed_runs
    per_seed = {}
    for seed, sub in seed_runs:
        path = paths.transfer_run(method, sub)
        run = (shared.candidates.select("query_id", "doc_id", "score", "rank") if first_stage
               else io.read_table(path, schemas.RUN))  # fmt: skip
        per_seed[seed], per_query = evaluate_transfer(run, shared, p)
        write_eval(per_query, per_seed[seed], paths.transfer_eval(method, sub))
    return prefixed(per_seed, TRANSFER)


JUDGED = "judged"  # evaluate.scopes: eval/<m>/[seed-<n>/]judged/, keys judged.*


def condense(frame: pl.DataFrame, keep: pl.DataFrame) -> pl.DataFrame:
    """The rows of a ranked ``frame`` (``query_id, doc_id, rank, …``) whose ``(query_id,
    doc_id)`` is in ``keep``, ranks renumbered 1..n per query in their order: Sakai's
    condensed list (SIGIR 2007, "Alternatives to Bpref"). Scores, hence ties, are kept."""
    rank = (pl.int_range(pl.len(), dtype=pl.Int64).over("query_id") + 1).alias("rank")
    kept = frame.join(keep.select("query_id", "doc_id").unique(), on=["query_id", "doc_id"],
                      how="semi")  # fmt: skip
    return kept.sort("query_id", "rank").with_columns(rank)


def judged_scope(run: pl.DataFrame, s: Shared) -> tuple[pl.DataFrame, Shared]:
    """The run and the background set (NFaiRR's ideal list) condensed to each query's judged
    documents (its qrels rows, relevant or not). On Grep-BiasIR these are the query's own six
    documents (its relevant and its non-relevant one, each in F/M/N versions), so the
    filled-in documents of other queries (``candidates.fill_seed``) weigh nothing."""
    return condense(run, s.qrels), replace(s, candidates=condense(s.candidates, s.qrels))


SCOPES: dict[str, Callable[[pl.DataFrame, Shared], tuple[pl.DataFrame, Shared]]] = {
    JUDGED: judged_scope,
}
"""``evaluate.scopes``: other views of each run, evaluated by the same suite and reported
beside the whole list as ``<scope>.<key>``."""


def scope_metrics(
    method: str, runs: Sequence[tuple[int, str, pl.DataFrame]], s: Shared, p: EvaluateParams,
    seeds: Sequence[int] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Every run of ``runs`` (``read_runs``) evaluated in each scope of ``p.scopes`` into
    ``eval/<method>/[seed-<n>/]<scope>/``; the aggregates as ``<scope>.<key>`` (mean over
    seeds, std under ``std``). ``seeds``: ``train.seeds`` (``seed_view``)."""
    out: dict[str, Any] = {}
    for scope in p.scopes:
        per_seed = {}
        for seed, sub, run in runs:
            scoped_run, scoped = SCOPES[scope](run, seed_view(s, seeds, seed))
            per_seed[seed], per_query = evaluate_run(scoped_run, scoped, p)
            write_eval(per_query, per_seed[seed], paths.evals(method, sub) / scope)
        out = merged(out, prefixed(per_seed, scope))
    return out


def merged(result: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``result`` updated with ``extra``, their ``std`` dicts merged (absent when both lack it)."""
    std = {**result.get("std", {}), **extra.get("std", {})}
    out = {**result, **{k: v for k, v in extra.items() if k != "std"}}
    return out | ({"std": std} if std else {})


WEAK = "weak"  # EqualizeIR's weak learners' own runs: runs/<m>/[seed-<n>/]weak.parquet


def weak_metrics(
    method: str, seed_runs: Sequence[tuple[int, str]], s: Shared, p: EvaluateParams,
    seeds: Sequence[int] | None = None,
) -> dict[str, float]:  # fmt: skip
    """The effectiveness of an EqualizeIR method's weak learners on the test queries (issue
    21), as ``weak.<key>`` (mean over seeds); empty for a method without weak runs."""
    files = [(seed, paths.weak_run(method, sub)) for seed, sub in seed_runs]
    if not all(path.is_file() for _, path in files):
        return {}
    per_seed = [evaluate_run(io.read_table(str(path), schemas.RUN), seed_view(s, seeds, seed),
                             p)[0] for seed, path in files]  # fmt: skip
    keys = [k for k in per_seed[0] if k.startswith(("MRR@", "nDCG@"))]
    return {f"{WEAK}.{k}": sum(a[k] for a in per_seed) / len(per_seed) for k in keys}


def read_runs(
    method: str, seed_runs: Sequence[tuple[int, str]], shared: Shared, first_stage: bool = False
) -> list[tuple[int, str, pl.DataFrame]]:
    """``(seed, seed folder, run)`` of each run to evaluate: the BM25 candidates themselves
    (``first_stage``), or ``runs/<method>/<seed folder>/run.parquet`` per ``seed_runs``
    (``Params.seed_runs_of(method)``)."""
    if first_stage:  # the first fold assignment's lists (one per query)
        cands = for_seed(shared.candidates, None, 0)
        return [(0, "", cands.select("query_id", "doc_id", "score", "rank"))]
    runs = [(seed, sub, paths.run_file(method, sub)) for seed, sub in seed_runs]
    return [(seed, sub, io.read_table(str(path), schemas.RUN)) for seed, sub, path in runs]


def seed_view(s: Shared, seeds: Sequence[int] | None, seed: int) -> Shared:
    """``s`` with the candidates (NFaiRR's background) of run seed ``seed``'s fold
    assignment (``pipeline.retrieval.folds.for_seed``; all of them with one assignment)."""
    return replace(s, candidates=for_seed(s.candidates, seeds, seed))


def evaluate_run(
    run: pl.DataFrame, s: Shared, p: EvaluateParams
) -> tuple[dict[str, float], pl.DataFrame]:
    """``(aggregates, per-query metrics)`` of one run: every metric family with its own
    settings (``evaluate.<family>``; the TREC Fair 2022 track's own metrics, ``trecfair.*``,
    are the track variant of ``awrf`` and ``exposure``)."""
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
        dimensions=s.alignments if s.alignments.height > 0 else None,
    )
    return evaluate(inputs, cutoffs=tuple(p.cutoffs), settings=p.metrics)


def over_seeds(per_seed: Mapping[int, Mapping[str, float]]) -> dict[str, Any]:
    """Mean over seeds of each aggregate every seed has, ``std`` (ddof 1) of each, ``seeds``."""
    keys = [k for k in next(iter(per_seed.values())) if all(k in a for a in per_seed.values())]
    spread = {k: mean_std([float(a[k]) for a in per_seed.values()]) for k in keys}
    mean = {k: m for k, (m, _) in spread.items()}
    std = {k: s if s is not None else 0.0 for k, (_, s) in spread.items()}
    return {**mean, "std": std, "seeds": list(per_seed)}


def run_info(
    method: str, doc_scores: pl.DataFrame, complexity: pl.DataFrame | None = None
) -> dict[str, str]:
    """The method's name, the tokenizer/lexicon its Ψ/ζ scores were computed with and the
    query-complexity indices used, dropped and named length proxies (SPEC §3)."""
    first = doc_scores.height > 0
    info = {
        "method": method,
        "tokenizer": doc_scores["tokenizer"][0] if first else "",
        "lexicon": doc_scores["lexicon"][0] if first else "",
    }
    if complexity is not None and complexity.height:
        for key, column in COMPLEXITY_INFO.items():
            if column in complexity.columns:
                info[key] = str(complexity[column][0])
    return info


COMPLEXITY_INFO = {
    "complexity_indices": "indices",
    "complexity_dropped": "dropped_indices",
    "complexity_length_proxies": "length_proxies",
}


HEADLINE = ("n_queries", "MRR@10", "nDCG@10", "{primary}", "ARaB-tf@10", "judged.{primary}",
            "transfer.MRR@10", "transfer.{primary}")
"""The keys of ``metrics/<method>.json`` (issue 41): effectiveness, the primary fairness
metric (``report.primary``), the signed ARaB (its direction: > 0 ranks male-leaning
documents higher, SPEC §4.1), the primary on the judged scope and on the held-out collection.
Everything else stays in ``eval/<method>/metrics.json``, which the report reads."""


def headline(result: Mapping[str, Any], primary: str) -> dict[str, Any]:
    """The DVC metrics file of a row: the `HEADLINE` keys it has (a row without the
    held-out collection has no ``transfer.*``) and its one-string `profile` digest."""
    keys = [k.format(primary=primary) for k in HEADLINE]
    out: dict[str, Any] = {k: result[k] for k in dict.fromkeys(keys) if k in result}
    if "profile" in result:
        out["profile"] = profile.compact(result["profile"])
    return out


def write_eval(per_query: pl.DataFrame, result: Mapping[str, Any], folder: Path) -> None:
    """``folder/per_query.parquet`` (keyed by query) and ``folder/metrics.json``."""
    table = per_query.to_arrow()
    schema = schemas.keyed_schema("per-query metrics", table, "query_id")
    io.write_table(table, str(folder / paths.PER_QUERY), schema)
    io.write_json(dict(result), str(folder / "metrics.json"))
