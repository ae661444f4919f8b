"""Evaluation metrics: one record per metric family, keyed by its name.

Every public module of this package that defines ``RECORD = Metric(...)`` is a family
(``pipeline.metrics.common``); ``common``, ``inputs``, ``runner``, ``suite``,
``trec_fair2022`` and modules starting with ``_`` are helpers. A family is a pure function
``fn(ctx: EvalInputs, cutoffs[, cfg]) -> pl.DataFrame`` (``cfg``: its own settings,
``evaluate.<family>``, for a record with a ``config``) returning one row per run query:
``query_id``, one Float64 column per metric value (``MRR@10``, ``ARaB-tf-abs@20``, ...; null
where the query is skipped for that metric) and Int64 per-query count columns (missing
documents, skipped-query flags) that ``pipeline.metrics.suite.evaluate`` sums. A family whose
optional input is None raises ``MissingInputError``; the suite then skips it with a log message.
The record's measures (key, direction, range, description) are what the report, the plots, the
significance marks, the ir_measures names and the property tests read, so a new metric is one
file.
"""

from __future__ import annotations

from pipeline.config import collect, lookup
from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.inputs import EvalInputs, MetricFn, MissingInputError, Summary

HELPERS = frozenset({"common", "inputs", "runner", "suite", "trec_fair2022"})
"""Public modules of this package that are not metric families."""


def _collect() -> dict[str, Metric]:
    records = collect(__name__, __path__, HELPERS, Metric, "metric family")
    for module, record in records:
        if record.name != module:
            raise TypeError(f"pipeline/metrics/{module}.py: RECORD must be named {module!r}")
    return {r.name: r for _, r in sorted(records, key=lambda mr: (mr[1].order, mr[1].name))}


METRICS: dict[str, Metric] = _collect()
"""Every metric family's record, by name, in the order of their columns."""
REGISTRY = METRICS
"""This plug-in package's records (``pipeline.plugins``)."""
SUMMARIES: dict[str, Summary] = {n: r.summary for n, r in METRICS.items() if r.summary}
"""Families whose aggregates are not per-query means: `summarise(per_query) -> {key: value}`
(empty when its columns are absent), added by `pipeline.metrics.suite.aggregate`."""
MEASURES: tuple[Measure, ...] = tuple(m for r in METRICS.values() for m in r.measures)
"""Every metric column of every family, in order."""


def get_record(name: str) -> Metric:
    """The record of family ``name``; an unknown name lists the known ones."""
    return lookup(METRICS, name, "metric")


def get_metric(name: str) -> MetricFn:
    """The function of family `name`; ValueError listing the known names otherwise."""
    return get_record(name).fn


def measure_of(column: str) -> Measure | None:
    """The measure of a metric column (``NFaiRR@10`` → the NFaiRR measure), or None."""
    return next((m for m in MEASURES if m.matches(column)), None)


def family_of(measure: Measure) -> str:
    """The name of the family that reports ``measure``."""
    return next(n for n, r in METRICS.items() if measure in r.measures)


__all__ = [
    "MEASURES",
    "METRICS",
    "SUMMARIES",
    "EvalInputs",
    "Measure",
    "Metric",
    "MetricFn",
    "MissingInputError",
    "family_of",
    "get_metric",
    "get_record",
    "measure_of",
]
