"""Evaluation metrics: a registry of metric families keyed by their params.yaml name.

Every family is a pure function `fn(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame`
returning one row per run query: `query_id`, one Float64 column per metric key (`MRR@10`,
`ARaB-tf-abs@20`, ...; null where the query is skipped for that metric) and Int64 per-query
count columns (missing documents, skipped-query flags) that `pipeline.metrics.suite.evaluate`
sums. A family whose optional input is None raises `MissingInputError`; the suite then skips
it with a log message.
"""

from __future__ import annotations

from pipeline.metrics.arab import arab
from pipeline.metrics.awrf import awrf
from pipeline.metrics.counterfactual import counterfactual
from pipeline.metrics.effectiveness import effectiveness
from pipeline.metrics.exposure import exposure
from pipeline.metrics.inputs import EvalInputs, MetricFn, MissingInputError, Summary
from pipeline.metrics.liwc import liwc
from pipeline.metrics.nfairr import nfairr
from pipeline.metrics.variation import summarise as summarise_variation
from pipeline.metrics.variation import variation

METRICS: dict[str, MetricFn] = {
    "effectiveness": effectiveness,
    "arab": arab,
    "nfairr": nfairr,
    "liwc": liwc,
    "awrf": awrf,
    "counterfactual": counterfactual,
    "exposure": exposure,
    "variation": variation,
}
SUMMARIES: dict[str, Summary] = {"variation": summarise_variation}
"""Families whose aggregates are not per-query means: `summarise(per_query) -> {key: value}`
(empty when its columns are absent), added by `pipeline.metrics.suite.aggregate`."""


def get_metric(name: str) -> MetricFn:
    """The metric family registered as `name`; ValueError listing the known names otherwise."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; known: {sorted(METRICS)}")
    return METRICS[name]


__all__ = ["METRICS", "SUMMARIES", "EvalInputs", "MetricFn", "MissingInputError", "get_metric"]
