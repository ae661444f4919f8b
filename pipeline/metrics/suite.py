"""Run the selected metric families and aggregate them (SPEC §4: per query, then averaged).

`evaluate` returns `(aggregates, per_query)`:

- `per_query`: one row per run query (sorted by `query_id`), `query_id` plus every family's
  columns (see `pipeline.metrics`);
- `aggregates`: every Float64 column → its mean over the queries where it is not null, which
  gives each metric its SPEC denominator (MRR/nDCG/ARaB/LIWC: all run queries; NFaiRR, AWRF
  and the gap: the non-skipped ones); every Int64 count column → its sum; plus `n_queries`
  and the keys of every `SUMMARIES` function (σ, c_v, per-bin values of `variation`).
  A metric with no evaluable query is left out (a warning says so), so the dict never holds
  NaN (the metrics JSON writer rejects non-finite numbers).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from pipeline.metrics import METRICS, SUMMARIES, MissingInputError, get_record
from pipeline.metrics.inputs import EvalInputs, check_cutoffs, query_frame

log = logging.getLogger(__name__)

DEFAULT_CUTOFFS = (10, 20)


def evaluate(
    inputs: EvalInputs,
    metrics: Sequence[str] | None = None,
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    settings: Mapping[str, Any] | None = None,
) -> tuple[dict[str, float], pl.DataFrame]:
    """Evaluate `inputs.run` with the metric families `metrics` (default: all registered),
    each with its own settings (`settings[name]`, its config; default: the config's
    defaults)."""
    ks = check_cutoffs(cutoffs)
    names = list(METRICS) if metrics is None else list(metrics)
    families = [(name, get_record(name)) for name in names]  # unknown names fail first
    table = query_frame(inputs.run)
    for name, record in families:
        try:
            frame = record.run(inputs, ks, (settings or {}).get(name))
        except MissingInputError as err:
            log.info("skipping metric family %r: %s", name, err)
            continue
        clash = (set(frame.columns) & set(table.columns)) - {"query_id"}
        if clash:
            raise RuntimeError(f"metric family {name!r} repeats columns {sorted(clash)}")
        table = table.join(frame, on="query_id", how="left", maintain_order="left")
    return aggregate(table), table


def aggregate(per_query: pl.DataFrame) -> dict[str, float]:
    """Means of the Float64 metric columns (nulls skipped), sums of the Int64 count columns."""
    out: dict[str, float] = {"n_queries": per_query.height}
    for name, dtype in per_query.schema.items():
        column = per_query[name]
        if dtype == pl.Float64:
            if column.null_count() == column.len():
                log.warning("metric %r has no evaluable query; left out of the aggregates", name)
                continue
            out[name] = float(column.mean())  # type: ignore[arg-type]
        elif dtype == pl.Int64:
            out[name] = int(column.sum())
    for summarise in SUMMARIES.values():  # aggregates that are not means (e.g. variation)
        out |= summarise(per_query)
    return out
