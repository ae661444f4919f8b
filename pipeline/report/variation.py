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

import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pipeline import io
from pipeline.metrics.variation import FLAGS, MEASURE, PREFIX
from pipeline.report.plots import save_png
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


def variation_markdown(frame: pl.DataFrame) -> str:
    """Markdown section: the overall/per-bin table with short column names."""
    p = f"{PREFIX}.{MEASURE}."
    short = frame.rename({c: c.removeprefix(p) for c in frame.columns if c != "method"})
    return (
        f"## Per-query variation of {MEASURE} by query complexity (SPEC §4.5)\n\n"
        f"μ, σ (sample), c_v = σ/μ of {MEASURE} over all queries and per complexity bin; "
        "`bin_spread` = max − min bin mean (lower is more even).\n\n"
        + markdown_table(short, [c for c in short.columns if c != "method"], digits=3)
        + "\n"
    )


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
    metrics: Mapping[str, Mapping[str, object]], out_dir: str | Path, plots_dir: str | Path | None
) -> list[Path]:
    """Write ``<out_dir>/variation.md`` and ``<plots_dir>/variation_bins.png``; paths written.

    Nothing is written (and a warning says so) when no method has variation keys.
    """
    frame = variation_frame(metrics)
    if frame.width == 1:
        log.warning("report: no method has %s.* keys; variation table and figure skipped", PREFIX)
        return []
    written = [Path(out_dir) / TABLE]
    io.write_text(variation_markdown(frame), written[0])
    if plots_dir is not None:
        written.append(Path(plots_dir) / FIGURE)
        save_png(variation_figure(frame), written[-1])
    return written
