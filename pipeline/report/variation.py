"""Report of the per-query variation family (EqualizeIR, SPEC §4.5).

A table of the ``var.*`` keys of every method's metrics (μ, σ, c_v of nDCG@10 overall and per
complexity bin, and the spread between bins) and the seed's Figure 3 shape: nDCG@10 by
complexity bin (easy → hard), one line per method.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pipeline import io
from pipeline.metrics.variation import FLAGS, MEASURE, PREFIX
from pipeline.report.plots import LINESTYLES, save_png
from pipeline.report.significance import PerQuery, as_seeds, query_means
from pipeline.report.tables import markdown_table, summary_frame

log = logging.getLogger(__name__)

BINS = tuple(FLAGS)
STATS = ("mean", "std", "cv")
TABLE = "variation.md"
FIGURE = "variation_bins.png"


def variation_keys(measure: str = MEASURE) -> list[str]:
    """The table's columns: overall μ/σ/c_v, then per bin, then the spread."""
    p = f"{PREFIX}.{measure}"
    per_bin = [f"{p}.{b}.{s}" for b in BINS for s in STATS]
    return [*(f"{p}.{s}" for s in STATS), *per_bin, f"{p}.bin_spread"]


def variation_frame(metrics: Mapping[str, Mapping[str, object]]) -> pl.DataFrame:
    """One row per method (in the given order): ``method`` and the variation keys present."""
    frame = summary_frame(metrics)
    return frame.select("method", *(k for k in variation_keys() if k in frame.columns))


def variation_markdown(frame: pl.DataFrame, info: Mapping[str, object] | None = None) -> str:
    """Markdown section: the overall/per-bin table with short column names; ``info`` (a
    metrics.json) names the complexity indices used, dropped and the length proxies."""
    p = f"{PREFIX}.{MEASURE}."
    short = frame.rename({c: c.removeprefix(p) for c in frame.columns if c != "method"})
    names = {"complexity_indices": "Indices averaged", "complexity_dropped": "Dropped",
             "complexity_length_proxies": "Kept but length proxies (Spearman ρ with the "
             "query's length in words)"}  # fmt: skip
    about = "".join(f"{label}: {(info or {}).get(k) or 'none'}.\n" for k, label in names.items()
                    if info and k in info)  # fmt: skip
    return (
        f"## Per-query variation of {MEASURE} by query complexity (SPEC §4.5)\n\n"
        f"μ, σ (sample), c_v = σ/μ of {MEASURE} over all queries and per complexity bin; "
        "`bin_spread` = max − min bin mean (lower is more even).\n\n"
        + (about + "\n" if about else "")
        + markdown_table(short, [c for c in short.columns if c != "method"], digits=3)
        + "\n"
    )


def _bin_stats(values: np.ndarray, bins: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per resample (rows of ``weights``, query multiplicities): ``[spread, c_v]`` of the
    weighted values, the spread being max − min of the bin means (bins 0..2)."""
    total = weights.sum(axis=1)
    mean = weights @ values / total
    var = (weights @ values**2 / total - mean**2) * total / np.maximum(total - 1, 1)
    cv = np.sqrt(np.maximum(var, 0)) / np.where(mean == 0, np.nan, mean)
    bin_means = np.stack([(weights * (bins == b)) @ values / np.maximum(
        (weights * (bins == b)).sum(axis=1), 1e-12) for b in range(len(BINS))], axis=1)  # fmt: skip
    return np.stack([bin_means.max(axis=1) - bin_means.min(axis=1), cv], axis=1)


def bin_intervals(
    per_query: Mapping[str, PerQuery], baseline: str, n_resamples: int = 10_000, seed: int = 0
) -> pl.DataFrame:
    """Bin spread and c_v of nDCG@10 per method with percentile bootstrap 95% intervals, and
    their paired differences from ``baseline`` (issue 21: "bin statistics with intervals").
    Queries are resampled (the same draws for every method, so differences are paired) on
    each query's mean over seeds; queries without a bin or value are left out."""
    flags = list(FLAGS.values())
    frames = {m: query_means(f, MEASURE) for m, f in per_query.items()}
    first = next(iter(as_seeds(per_query[baseline]).values()))
    if not set(flags) <= set(first.columns):
        return pl.DataFrame()
    bins = first.select("query_id", pl.concat_list(flags).list.arg_max().alias("_bin"),
                        pl.sum_horizontal(flags).alias("_n"))  # fmt: skip
    ids = bins.filter(pl.col("_n") == 1)["query_id"]
    index = pl.DataFrame({"query_id": ids})
    joined = {
        m: index.join(f, on="query_id", how="left")[MEASURE].to_numpy() for m, f in frames.items()
    }
    keep = np.all([np.isfinite(v.astype(float)) for v in joined.values()], axis=0)
    b = index.join(bins, on="query_id", how="left")["_bin"].to_numpy()[keep]
    n = int(keep.sum())
    draws = np.random.default_rng(seed).multinomial(n, np.full(n, 1 / n), size=n_resamples)
    weights = draws.astype(np.float64)
    point = {
        m: _bin_stats(v[keep].astype(float), b, np.ones((1, int(keep.sum()))))[0]
        for m, v in joined.items()
    }
    boot = {m: _bin_stats(v[keep].astype(float), b, weights) for m, v in joined.items()}
    rows = []
    for m in frames:
        diff = boot[m] - boot[baseline]
        lo, hi = np.nanpercentile(boot[m], [2.5, 97.5], axis=0)
        dlo, dhi = np.nanpercentile(diff, [2.5, 97.5], axis=0)
        rows.append({"method": m, "bin_spread": point[m][0], "spread_low": lo[0],
                     "spread_high": hi[0], "cv": point[m][1], "cv_low": lo[1], "cv_high": hi[1],
                     "d_spread": point[m][0] - point[baseline][0], "d_spread_low": dlo[0],
                     "d_spread_high": dhi[0], "d_cv": point[m][1] - point[baseline][1],
                     "d_cv_low": dlo[1], "d_cv_high": dhi[1]})  # fmt: skip
    return pl.DataFrame(rows)


def intervals_markdown(frame: pl.DataFrame, baseline: str) -> str:
    """The intervals table of ``bin_intervals``."""
    lines = [
        f"### With 95% intervals (bootstrap over queries) and differences from `{baseline}`",
        "",
        "| method | bin_spread [95% CI] | c_v [95% CI] | Δ bin_spread [95% CI] | Δ c_v [95% CI] |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in frame.iter_rows(named=True):
        same = r["method"] == baseline
        cells = [f"{r['bin_spread']:.3f} [{r['spread_low']:.3f}, {r['spread_high']:.3f}]",
                 f"{r['cv']:.3f} [{r['cv_low']:.3f}, {r['cv_high']:.3f}]",
                 "" if same else f"{r['d_spread']:+.3f} [{r['d_spread_low']:+.3f}, "
                 f"{r['d_spread_high']:+.3f}]",
                 "" if same else
                 f"{r['d_cv']:+.3f} [{r['d_cv_low']:+.3f}, {r['d_cv_high']:+.3f}]"]  # fmt: skip
        lines.append(f"| {r['method']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def variation_figure(
    frame: pl.DataFrame, intervals: pl.DataFrame | None = None,
    shown: Sequence[str] | None = None,
) -> Figure:  # fmt: skip
    """nDCG@10 per complexity bin (EqualizeIR Figure 3) with the claim it carries (issue 41:
    30 near-identical small multiples carried none). Left: the mean per bin of the rows
    ``shown`` (default: the first three, the reference rows and the baseline), one line each.
    Right, with ``intervals`` (`bin_intervals`): every other method's change of c_v (the
    variation across queries) from the baseline with its 95% bootstrap interval, sorted, the
    zero line marked, so a method that evens out the bins is one whose whisker ends left of
    zero."""
    rows = {r["method"]: r for r in frame.iter_rows(named=True)}
    names = list(shown) if shown is not None else list(rows)[:3]
    has_ci = intervals is not None and intervals.height > 1
    fig = Figure(figsize=(10.5 if has_ci else 5.2, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2 if has_ci else 1, squeeze=False).ravel()
    x = list(range(len(BINS)))
    for i, m in enumerate(n for n in names if n in rows):
        axes[0].plot(x, _bin_means(rows[m]), marker="o", markersize=4, color=f"C{i % 10}",
                     linestyle=LINESTYLES[i % len(LINESTYLES)], label=m)  # fmt: skip
    axes[0].set_xticks(x, list(BINS), fontsize=8)
    axes[0].set(xlabel="query linguistic complexity", ylabel=f"{MEASURE} (mean per bin)")
    axes[0].set_title(f"{MEASURE} by query complexity", fontsize=9)
    axes[0].legend(fontsize=7, frameon=False)
    axes[0].grid(alpha=0.3)
    if has_ci and intervals is not None:
        ci = intervals.filter(pl.col("d_cv_low").is_not_null()
                              & ~pl.col("method").is_in(names)).sort("d_cv")  # fmt: skip
        y = list(range(ci.height))
        axes[1].errorbar(ci["d_cv"].to_list(), y, fmt="o", markersize=3, color="C0",
                         xerr=[(ci["d_cv"] - ci["d_cv_low"]).to_list(),
                               (ci["d_cv_high"] - ci["d_cv"]).to_list()])  # fmt: skip
        axes[1].axvline(0.0, color="0.3", linewidth=0.8, linestyle="--")
        axes[1].set_yticks(y, ci["method"].to_list(), fontsize=6.5)
        axes[1].set_xlabel("Δ c_v vs the baseline [95% bootstrap interval]; < 0: less variation")
        axes[1].set_title(f"variation of {MEASURE} across queries, each method", fontsize=9)
        axes[1].grid(alpha=0.3, axis="x")
    return fig


def _bin_means(row: Mapping[str, object]) -> list[float]:
    values = [row.get(f"{PREFIX}.{MEASURE}.{b}.mean") for b in BINS]
    return [float("nan") if v is None else float(v) for v in values]  # type: ignore[arg-type]


def write_variation(
    metrics: Mapping[str, Mapping[str, object]], out_dir: str | Path, plots_dir: str | Path | None,
    per_query: Mapping[str, PerQuery] | None = None, baseline: str | None = None,
    n_resamples: int = 10_000, seed: int = 0,
) -> list[Path]:  # fmt: skip
    """Write ``<out_dir>/variation.md`` and ``<plots_dir>/variation_bins.png``; paths written.
    With ``per_query`` and ``baseline``, the table of :func:`bin_intervals` follows.

    Nothing is written (and a warning says so) when no method has variation keys.
    """
    frame = variation_frame(metrics)
    if frame.width == 1:
        log.warning("report: no method has %s.* keys; variation table and figure skipped", PREFIX)
        return []
    written = [Path(out_dir) / TABLE]
    text = variation_markdown(frame, next(iter(metrics.values()), None))
    intervals = None
    if per_query is not None and baseline is not None:
        intervals = bin_intervals(per_query, baseline, n_resamples, seed)
        if intervals.height:
            text += "\n" + intervals_markdown(intervals, baseline)
    io.write_text(text, written[0])
    if plots_dir is not None:
        written.append(Path(plots_dir) / FIGURE)
        firsts = list(metrics)[:2] + ([baseline] if baseline else [])
        save_png(variation_figure(frame, intervals, list(dict.fromkeys(firsts))), written[-1])
    return written
