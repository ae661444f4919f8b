"""Report of the per-query variation family (EqualizeIR, SPEC §4.5).

A table of the ``var.*`` keys of every method's metrics (μ, σ, c_v of nDCG@10 overall and per
complexity bin, and the spread between bins) and the seed's Figure 3 shape: nDCG@10 by
complexity bin (easy → hard), one line per method.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pipeline import io
from pipeline.metrics.variation import FLAGS, MEASURE, PREFIX
from pipeline.report.plots import save_png
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


def variation_figure(frame: pl.DataFrame, reference: str | None = None) -> Figure:
    """nDCG@10 mean per complexity bin (EqualizeIR Figure 3) as small multiples: one panel per
    method with its line in colour over every other method's in light grey, and the
    ``reference`` row (default: the first row, BM25) dashed; one y scale for all panels."""
    rows = list(frame.iter_rows(named=True))
    ref = reference if reference is not None else (rows[0]["method"] if rows else None)
    cols = min(6, max(len(rows), 1))
    nrows = math.ceil(len(rows) / cols) if rows else 1
    fig = Figure(figsize=(2.1 * cols, 1.75 * nrows + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, cols, sharex=True, sharey=True, squeeze=False).ravel()
    x = list(range(len(BINS)))
    lines = {r["method"]: _bin_means(r) for r in rows}
    for i, (ax, (method, y)) in enumerate(zip(axes, lines.items(), strict=False)):
        for other, oy in lines.items():
            if other != method:
                ax.plot(x, oy, color="0.85", linewidth=0.8, zorder=1)
        if ref is not None and ref != method and ref in lines:
            ax.plot(x, lines[ref], color="0.4", linestyle="--", linewidth=0.9, zorder=2)
        ax.plot(x, y, marker="o", markersize=3, color=f"C{i % 10}", linewidth=1.6, label=method,
                zorder=3)  # fmt: skip
        ax.set_title(method, fontsize=7.5)
        ax.grid(alpha=0.3)
    for ax in axes[len(lines) :]:
        ax.set_visible(False)
    axes[0].set_xticks(x, list(BINS), fontsize=7)
    fig.supxlabel("query linguistic complexity", fontsize=9)
    fig.supylabel(f"{MEASURE} (mean per bin)", fontsize=9)
    if ref is not None:
        fig.suptitle(f"{MEASURE} by query complexity; dashed: {ref}, grey: the other rows",
                     fontsize=9)  # fmt: skip
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
    if per_query is not None and baseline is not None:
        intervals = bin_intervals(per_query, baseline, n_resamples, seed)
        if intervals.height:
            text += "\n" + intervals_markdown(intervals, baseline)
    io.write_text(text, written[0])
    if plots_dir is not None:
        written.append(Path(plots_dir) / FIGURE)
        save_png(variation_figure(frame), written[-1])
    return written
