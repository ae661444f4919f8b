"""The comparison in the shape of a ranx `Report` dictionary (`ranx.Report.to_dict()`, ranx
0.3.x `data_structures/report.py`), so that ranx users read `metrics/comparison_ranx.json`
with the code they already have:

```
{"stat_test": "student", "metrics": [...], "model_names": [...],
 "<model>": {"scores": {"<metric>": mean, ...},
             "comparisons": {"<other model>": {"<metric>": p-value, ...}, ...},
             "win_tie_loss": {"<other model>": {"<metric>": {"W": n, "T": n, "L": n}}, ...}}}
```

As in `ranx.compare`: every ordered pair of models, the two-sided paired Student t-test
(`pipeline.stats.paired_ttest`, the test ranx runs with `stat_test="student"`) with its raw,
unadjusted p-value, and win/tie/loss counted on the raw per-query values (`W`: queries where
the model's value is higher than the other's, whatever the metric's direction). Differences
from ranx, all forced by our data: scores are the mean over seeds of each seed's mean over
its non-null queries (`pipeline.report.significance`); the test and the counts use each
query's mean over seeds, on the queries non-null in both models; a p-value is null where
fewer than two queries pair up; metric names are ours (`MRR@10`, `ARaB-tf-abs@10`, ...).
The multiple-comparison-adjusted p-values vs the baseline are in `comparison.csv`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from pipeline.report.significance import PerQuery, mean_std, query_means, seed_aggregates
from pipeline.stats import paired_ttest

STAT_TEST = "student"


def _matrix(per_query: Mapping[str, PerQuery], metric: str) -> np.ndarray:
    """`models × queries` values of `metric` (each query's mean over seeds; NaN = missing)."""
    means = {m: query_means(frames, metric) for m, frames in per_query.items()}
    ids = sorted({q for frame in means.values() for q in frame["query_id"].to_list()})
    index = pl.DataFrame({"query_id": ids}, schema={"query_id": pl.Utf8})
    rows = [
        index.join(frame, on="query_id", how="left")[metric].fill_null(float("nan")).to_numpy()
        for frame in means.values()
    ]
    return np.vstack(rows) if ids else np.zeros((len(per_query), 0))


def _round(p: float | None) -> float | None:
    return None if p is None else float(f"{p:.6g}")


def _pair(x: np.ndarray, y: np.ndarray) -> tuple[float | None, dict[str, int]]:
    """p-value of the paired t-test and x's win/tie/loss against y on the shared queries."""
    ok = np.isfinite(x) & np.isfinite(y)
    a, b = x[ok], y[ok]
    wtl = {"W": int((a > b).sum()), "T": int((a == b).sum()), "L": int((a < b).sum())}
    return _round(paired_ttest(a, b).p), wtl


def ranx_report(per_query: Mapping[str, PerQuery], metrics: Sequence[str]) -> dict[str, Any]:
    """The `Report.to_dict()` of comparing every pair of `per_query`'s models on `metrics`."""
    models = list(per_query)
    out: dict[str, Any] = {"stat_test": STAT_TEST, "metrics": list(metrics), "model_names": models}
    for m in models:
        out[m] = {
            "scores": {k: mean_std(seed_aggregates(per_query[m], k))[0] for k in metrics},
            "comparisons": {o: {} for o in models if o != m},
            "win_tie_loss": {o: {} for o in models if o != m},
        }
    for metric in metrics:
        values = _matrix(per_query, metric)
        for i, m in enumerate(models):
            for j, o in enumerate(models):
                if i == j:
                    continue
                p, wtl = _pair(values[i], values[j])
                out[m]["comparisons"][o][metric] = p
                out[m]["win_tie_loss"][o][metric] = wtl
    return out
