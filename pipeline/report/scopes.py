"""The evaluation scopes in the report (issue 29): each method's runs condensed to each
query's judged documents (``evaluate.scopes: [judged]``, ``pipeline.metrics.runner``),
compared with the baseline by the same test as the whole lists, and their section of
`metrics/summary.md`. Per-query frames: `eval/<method>/[seed-<n>/]judged/per_query.parquet`.

Why: a short BM25 list is filled to ``candidates.top_k`` with other queries' documents, and
BM25 itself matches other queries' documents, so most of a top 10 on Grep-BiasIR is not the
query's own; the fairness metrics then measure those documents as much as the query's. Over
its judged documents (on Grep-BiasIR its relevant and non-relevant document in F, M and N
versions) a metric measures how a ranker orders the versions of the query's own documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from pipeline.report import tidy
from pipeline.report.significance import PerQuery, compare
from pipeline.report.tables import comparison_table, placed

JUDGED = "judged"  # pipeline.metrics.runner.JUDGED (not imported: the report stays light)
# From the metric records (``Measure.report``, section "judged"): MRR, nDCG, NFaiRR,
# ARaB-tf-abs, AWRF at k; gap-abs.
SCOPE_AT_K = tuple(m.key for m in placed("judged") if "{k}" in m.key)
SCOPE_OVERALL = tuple(m.key for m in placed("judged") if "{k}" not in m.key)
# LIWC@k is an unweighted mean over the top k: over at most k judged documents it is the same
# for every ordering, so it is left out; male-wins and neutral-first compare versions of the
# same documents, unchanged by condensing (the main direction table holds them).


def scope_comparison(
    scoped: Mapping[str, PerQuery], method_names: Sequence[str], baseline: str,
    reference: Sequence[str],
    alpha: float, correction: str, scope: str = JUDGED, folds: pl.DataFrame | None = None,
) -> pl.DataFrame | None:  # fmt: skip
    """The scope's comparison (same test as the main one, ``folds``: the fold model that
    scored each query) over ``scoped``, the scope's view of the report's table
    (``pipeline.report.tidy.views``), or None when a method was not evaluated in it
    (``evaluate.scopes`` without it)."""
    per_query = tidy.pick(scoped, method_names)
    if per_query is None:
        return None
    same = _constant_columns(per_query)
    if same:  # e.g. LIWC@k over <= k judged documents: the same for every ordering
        per_query = {m: _drop(v, same) for m, v in per_query.items()}
    return compare(per_query, baseline, reference=reference, alpha=alpha, correction=correction,
                   folds=folds)  # fmt: skip


def _frames(pq: PerQuery) -> list[pl.DataFrame]:
    return list(pq.values()) if isinstance(pq, Mapping) else [pq]


def _drop(pq: PerQuery, columns: Sequence[str]) -> PerQuery:
    if isinstance(pq, Mapping):
        return {seed: frame.drop(columns) for seed, frame in pq.items()}
    return pq.drop(columns)


def _constant_columns(per_query: Mapping[str, PerQuery]) -> list[str]:
    """Metric columns whose per-query values are the same in every run of every method: they
    say nothing about a ranker in this scope and are left out of its comparison."""
    frames = [f.sort("query_id") for pq in per_query.values() for f in _frames(pq)]
    first = frames[0]
    floats = [c for c, t in first.schema.items() if t == pl.Float64]
    return [c for c in floats
            if all(c in f.columns and f.height == first.height and f[c].equals(first[c])
                   for f in frames[1:])]  # fmt: skip


def judged_markdown(
    cmp: pl.DataFrame, baseline: str, reference: Sequence[str], cutoffs: Sequence[int]
) -> str:
    """The judged scope's section of summary.md: absolute values and changes at @10 (else
    the first cut-off) beside the whole lists' tables above it."""
    k = 10 if 10 in cutoffs else cutoffs[0]
    n = int(cmp.filter(pl.col("method") == baseline)["n_queries"].fill_null(0).max() or 0)  # type: ignore[arg-type]
    cols = [*(c.format(k=k) for c in SCOPE_AT_K), *SCOPE_OVERALL]
    return "\n".join([
        "", f"## Over each query's judged documents ({n} queries)", "",
        "The same runs condensed to each query's judged documents (`evaluate.scopes: "
        "[judged]`; Sakai 2007's condensed lists): on Grep-BiasIR the query's relevant and "
        "non-relevant document in F, M and N versions, without the other queries' documents "
        "that BM25 matched or that fill a short list (`candidates.fill_seed`). NFaiRR's ideal "
        "list is then the query's own documents sorted by neutrality. A query with no judged "
        "candidate is left out. A metric with the same per-query values in every run (LIWC: "
        "an unweighted mean over <= k judged documents) is left out. Keys `judged.<metric>` in "
        "`metrics/<method>.json` and `comparison.csv`.",
        "", comparison_table(cmp, cols), "",
        f"### Change vs `{baseline}` (%) [family-wise 95% interval, % of |{baseline}|]", "",
        comparison_table(cmp, cols, change=True, skip=[baseline, *reference]), "",
    ])  # fmt: skip
