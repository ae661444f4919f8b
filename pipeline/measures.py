"""Public API: the suite's metrics for any run, and the fairness metrics as ir_measures measures.

Two ways in, both computing exactly what `dvc repro` computes (`pipeline.metrics`):

```python
import ir_measures
from pipeline import measures

coll = measures.Collection.from_corpus(corpus)          # doc_id, text[, group]: scores it
aggregates, per_query = measures.compute(run, qrels, coll)         # every suite metric
m = measures.ir_measures_for(coll)                      # ir_measures custom measures
ir_measures.calc_aggregate([m.ARaB_tf_abs@10, m.NFaiRR@10, measures.RR@10], qrels_df, run_df)
```

**Collection.** `Collection.from_corpus` scores the corpus with the shipped word lists
(`pipeline.bias`, SPEC §2; tokenizer `words` by default, `reference` for comparability with
published MS MARCO numbers) and the user's LIWC `.dic` when given (else the open lexicon). A
`group` column (F/M/N, e.g. Grep-BiasIR's content gender) enables AWRF and the
counterfactual gap; `background` (`query_id, doc_id[, rank]`, e.g. the BM25 candidates) is
NFaiRR's background set (SPEC §4.3); without it a query's background is its own run.

**ir_measures measures** (`ir_measures.define_byquery`): every measure of a metric record
with an `ir_measures` name (`pipeline/metrics`): `ARaB_{tc,tf,bool}` (signed, male −
female) and `ARaB_{tc,tf,bool}_abs`, `NFaiRR`, `LIWC`, `AWRF`, `nDCGxAWRF` take a cut-off
(`@10`); `gap_mean`, `gap_abs`, `gap_male_wins` read the whole ranking. Effectiveness uses
ir_measures' own `RR@10` (the suite's `MRR@10`, the name papers print) and `nDCG@10`
(`IR_MEASURES_NAMES` maps the names). Two deliberate departures from a plain
`define_byquery` measure, so that values equal the suite's: (1) the measure sees the query's
whole ranking and applies the cut-off itself, because tie blocks that straddle the cut-off
(SPEC §1 "Ties") and NFaiRR's background need the documents below it; (2) a query where the
metric is undefined (NFaiRR with IFaiRR = 0, AWRF without labelled documents, the gap without
both versions) yields NaN and the aggregate is the mean over the defined queries, as the
suite's. As with every ir_measures measure, queries of the qrels missing from the run count
(NaN here, so they are skipped); give qrels of the run's queries. Runs are ordered by score,
ties keeping the input order (ir_measures sorts stably); RR and nDCG come from pytrec_eval,
which breaks ties by document id, so they equal the suite's only for runs without ties.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.bias import (
    REPRESENTATIVE_PATH,
    SPECIFIC_PATH,
    load_lexicon,
    load_wordlist,
    score_documents,
)
from pipeline.metrics import METRICS, EvalInputs, get_record, measure_of
from pipeline.metrics.suite import DEFAULT_CUTOFFS, evaluate
from pipeline.schemas import labelled_groups
from pipeline.ties import in_input_order

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

DEFAULT_TOKENIZER = "words"
IR_MEASURES_NAMES = {
    m.base: m.ir_measures
    for r in METRICS.values()
    if r.ir_measures_native
    for m in r.measures
    if m.ir_measures
}
"""Suite metric → ir_measures measure of the same value (`MRR@10` is ir_measures' `RR@10`)."""

# ir_measures name → (metric family, suite key; `{k}` = the cut-off, absent = whole ranking),
# read from the metric records (pipeline/metrics): every measure with an ir_measures name
FAIRNESS: dict[str, tuple[str, str]] = {
    m.ir_measures: (r.name, m.key)
    for r in METRICS.values()
    if not r.ir_measures_native
    for m in r.measures
    if m.ir_measures
}


def score_corpus(
    corpus: pl.DataFrame,
    *,
    tokenizer: str = DEFAULT_TOKENIZER,
    liwc_dic: str | Path | None = None,
    specific: str | Path = SPECIFIC_PATH,
    representative: str | Path = REPRESENTATIVE_PATH,
    tau: float = 1.0,
) -> pl.DataFrame:
    """Per-document Ψ, ζ and lexicon shares (SPEC §2) of `corpus` (`doc_id`, `text`)."""
    return score_documents(
        corpus,
        load_wordlist(specific),
        load_wordlist(representative),
        load_lexicon(liwc_dic),
        tokenizer=tokenizer,
        tau=tau,
    )


def doc_groups(corpus: pl.DataFrame, source: str = "corpus") -> pl.DataFrame | None:
    """`doc_id, group` for documents labelled F, M or N (None without a `group` column or
    without any such label); an unknown label names `source` and stops."""
    return labelled_groups(corpus, source)


@dataclass(frozen=True)
class Collection:
    """What the fairness metrics know about the documents (see the module docstring)."""

    doc_scores: pl.DataFrame
    doc_groups: pl.DataFrame | None = None
    background: pl.DataFrame | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    _cache: dict[tuple[Any, ...], pl.DataFrame] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def from_corpus(
        cls,
        corpus: pl.DataFrame,
        *,
        tokenizer: str = DEFAULT_TOKENIZER,
        liwc_dic: str | Path | None = None,
        background: pl.DataFrame | None = None,
        settings: Mapping[str, Any] | None = None,
        source: str = "corpus",
    ) -> Collection:
        """Score `corpus` (`doc_id, text[, group]`, read from `source`) and keep its F/M/N
        labels; `settings`: metric family → its own config (`evaluate.<family>`)."""
        groups = doc_groups(corpus, source)  # checked first: scoring a big corpus takes time
        scores = score_corpus(corpus, tokenizer=tokenizer, liwc_dic=liwc_dic)
        return cls(scores, groups, background, dict(settings or {}))

    def candidates(self, run: pl.DataFrame) -> pl.DataFrame:
        """NFaiRR's background of the run's queries: `background`, else the run itself."""
        if self.background is None:
            return run.select("query_id", "doc_id", "rank")
        bg = self.background.select(pl.col("query_id", "doc_id").cast(pl.Utf8))
        bg = bg.join(run.select("query_id").unique(), on="query_id", how="semi")
        return bg.with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))


def ranked(run: pl.DataFrame) -> pl.DataFrame:
    """`query_id, doc_id, score, rank`: ranks 1..n by score descending, ties in input order."""
    out = run.select(
        pl.col("query_id").cast(pl.Utf8), pl.col("doc_id").cast(pl.Utf8), pl.col("score")
    ).cast({"score": pl.Float64})
    return in_input_order(out)


def inputs(
    run: pl.DataFrame,
    qrels: pl.DataFrame | None,
    coll: Collection,
    query_complexity: pl.DataFrame | None = None,
) -> EvalInputs:
    """The `EvalInputs` of one run: qrels restricted to the run's queries (SPEC §4)."""
    run = ranked(run)
    if qrels is not None:
        qrels = qrels.select(
            pl.col("query_id", "doc_id").cast(pl.Utf8), pl.col("relevance").cast(pl.Int64)
        ).join(run.select("query_id").unique(), on="query_id", how="semi")
    return EvalInputs(
        run=run,
        qrels=qrels,
        doc_scores=coll.doc_scores,
        candidates=coll.candidates(run),
        doc_groups=coll.doc_groups,
        query_complexity=query_complexity,
    )


def compute(
    run: pl.DataFrame,
    qrels: pl.DataFrame | None,
    coll: Collection,
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    families: Sequence[str] | None = None,
    query_complexity: pl.DataFrame | None = None,
) -> tuple[dict[str, float], pl.DataFrame]:
    """Every suite metric of `run` (`query_id, doc_id, score`): `(aggregates, per_query)`.

    Families whose inputs are missing (qrels, F/M/N groups, query complexity) are skipped
    with a log message, as in the evaluate stage; each family runs with its settings in
    `coll.settings`.
    """
    names = list(METRICS) if families is None else list(families)
    ctx = inputs(run, qrels, coll, query_complexity)
    return evaluate(ctx, names, cutoffs, coll.settings)


# ---- ir_measures -------------------------------------------------------------------------


def _frames(qrels: pd.DataFrame, run: pd.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One query's pandas qrels and run (sorted by score, stably) as polars tables."""
    r = pl.DataFrame(
        {
            "query_id": run["query_id"].astype(str).tolist(),
            "doc_id": run["doc_id"].astype(str).tolist(),
            "score": run["score"].astype(float).tolist(),
        },
        schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "score": pl.Float64},
    )
    q = pl.DataFrame(
        {
            "query_id": qrels["query_id"].astype(str).tolist(),
            "doc_id": qrels["doc_id"].astype(str).tolist(),
            "relevance": qrels["relevance"].astype(int).tolist(),
        },
        schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "relevance": pl.Int64},
    )
    return r, q


def query_value(
    coll: Collection, name: str, cutoff: int | None, qrels: pd.DataFrame, run: pd.DataFrame
) -> float:
    """The value of measure `name` at `cutoff` for one query (NaN where undefined)."""
    family, key = FAIRNESS[name]
    r, q = _frames(qrels, run)
    if r.height == 0:
        return math.nan
    k = r.height if cutoff is None else int(cutoff)
    cache_key = (family, k, tuple(r.iter_rows()), tuple(q.iter_rows()))
    if cache_key not in coll._cache:
        if len(coll._cache) > 10_000:
            coll._cache.clear()
        docs = pl.concat([r.select("doc_id"), q.select("doc_id")])
        if coll.background is not None:
            qid = r["query_id"][0]
            bg = coll.background.filter(pl.col("query_id").cast(pl.Utf8) == qid)
            docs = pl.concat([docs, bg.select(pl.col("doc_id").cast(pl.Utf8))])
        small = Collection(
            coll.doc_scores.join(docs.unique(), on="doc_id", how="semi"),
            coll.doc_groups,
            coll.background,
            coll.settings,
        )
        with _quiet("pipeline.metrics"):  # per-query counts would warn once per query
            ctx = inputs(r, q, small)
            coll._cache[cache_key] = get_record(family).run(ctx, (k,), coll.settings.get(family))
    value = coll._cache[cache_key][key.format(k=k)][0]
    return math.nan if value is None else float(value)


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Log only errors of logger `name` inside the block."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class _NanMean:
    """Mean over the queries where the measure is defined (the suite's denominator)."""

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def add(self, value: float) -> None:
        if not math.isnan(value):
            self.total, self.count = self.total + value, self.count + 1

    def result(self) -> float:
        return self.total / self.count if self.count else math.nan


def _measure(coll: Collection, name: str) -> Any:
    """`ir_measures.define_byquery` measure `name`, seeing whole rankings (module docstring)."""
    import ir_measures
    from ir_measures.util import Metric

    family, key = FAIRNESS[name]
    measure = measure_of(key.format(k=10))
    assert measure is not None

    def per_query(qrels: pd.DataFrame, run: pd.DataFrame) -> float:
        return query_value(coll, name, None, qrels, run)

    base = ir_measures.define_byquery(
        per_query,
        name=name,
        support_cutoff=measure.per_cutoff,
        pretty_name=measure.base,
        short_desc=f"{measure.description} ({get_record(family).reference})",
    )

    class WholeRanking(type(base)):  # type: ignore[misc]
        DEFAULT = math.nan

        def runtime_impl(self, qrels: pd.DataFrame, run: pd.DataFrame) -> Iterator[Any]:
            cutoff = self.params.get("cutoff")
            for qid, run_q in run.groupby("query_id", sort=False):
                qrels_q = qrels[qrels["query_id"] == qid]
                yield Metric(qid, self, query_value(coll, name, cutoff, qrels_q, run_q))

        def aggregator(self) -> _NanMean:
            return _NanMean()

    return WholeRanking()


def ir_measures_for(coll: Collection) -> SimpleNamespace:
    """The fairness measures bound to `coll`, by name (`m.NFaiRR@10`), plus `RR` and `nDCG`."""
    import ir_measures

    found = {name: _measure(coll, name) for name in FAIRNESS}
    return SimpleNamespace(**found, RR=ir_measures.RR, nDCG=ir_measures.nDCG)


def ir_measures_name(key: str) -> str:
    """The ir_measures name of a suite key (`MRR@10` → `RR@10`; fairness keys unchanged)."""
    base, at, k = key.partition("@")
    return IR_MEASURES_NAMES.get(base, base) + at + k


def __getattr__(name: str) -> Any:
    """`measures.RR` / `measures.nDCG`: ir_measures' own (imported on first use)."""
    if name in ("RR", "nDCG"):
        import ir_measures

        return getattr(ir_measures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
