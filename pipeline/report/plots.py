"""Figures of the report (matplotlib, Agg, no pyplot state): curriculum bucket probabilities and
parameter sweeps here, the trade-off and training small multiples in `family_figures.py`.
Every figure function is pure (frames in, `Figure` out); `save_png` writes a figure
atomically.

Axis labels carry the metric's direction (`axis_label`): `MRR@10 ↑`, `NFaiRR@10 ↑ fairer`,
`|ARaB-tf|@10 ↓ fairer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pipeline import io
from pipeline.metrics import measure_of

_PARAM_NAMES = {
    "lambda": "λ",
    "lambda_pos": "λ⁺",
    "lambda_neg": "λ⁻",
    "sigma": "σ",
    "n_buckets": "number of buckets",
    "mu": "μ",
}


LINESTYLES = ("-", "--", ":", "-.")


def axis_label(metric: str) -> str:
    """`metric` with its direction, from its record (pipeline/metrics): `MRR@10 ↑`,
    `NFaiRR@10 ↑ fairer`, `|ARaB-tf|@10 ↓ fairer`; a key of no record stays as it is."""
    measure = measure_of(metric)
    return metric if measure is None else measure.axis_label(metric)


def param_label(param: str) -> str:
    """Axis label of a swept parameter: `methods.*.lambda` → `λ (methods.*.lambda)`."""
    leaf = param.rsplit(".", 1)[-1]
    name = _PARAM_NAMES.get(leaf)
    return f"{name} ({param})" if name else param


def save_png(fig: Figure, path: str | Path, dpi: int = 150) -> None:
    """Write `fig` as PNG atomically (temporary file, then rename)."""
    with io.atomic_path(path, ".png") as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")


def bucket_probability_figure(frame: pl.DataFrame) -> Figure:
    """The curriculum's bucket probabilities (SPEC §6.1, the paper's Figure 1), one line per σ.

    `frame` is tidy: `sigma, bucket, psi_mean, probability` (bucket 0 holds the lowest Ψ).
    """
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.add_subplot()
    for (sigma,), part in frame.sort("sigma", "bucket").group_by("sigma", maintain_order=True):
        ax.plot(
            part["bucket"], part["probability"], marker="o", markersize=3, label=f"σ = {sigma:g}"
        )
    ax.set_xlabel("bucket (sorted by mean Ψ of the positive, low → high)")
    ax.set_ylabel("probability of drawing the bucket")
    ax.legend(title="Gaussian width", fontsize=8)
    ax.grid(True, alpha=0.3)
    return fig


def sweep_figure(
    frame: pl.DataFrame,
    metrics: Sequence[str],
    param: str,
    *,
    flat: pl.DataFrame | None = None,
    logx: bool = False,
) -> Figure:
    """One panel per metric: the metric against the swept parameter, one line per swept method.

    `frame` is `pipeline.report.sweeps.sweep_frame`'s output: `method, x, x_num` and the metric
    columns. Non-numeric values of the parameter (e.g. `n_buckets: all`) make the axis
    categorical, ordered numbers first. Methods with one value of the parameter in every
    experiment were not swept: with `flat` (`method` and the metric columns: methods the
    parameter does not apply to, e.g. the baseline) they are drawn as references, the
    baseline as a dashed line and the others as one grey band from their lowest to their
    highest value, so the figure stays readable with the default's 28 methods.
    """
    counts = frame.group_by("method").agg(pl.col("x").n_unique().alias("n"))
    swept = set(counts.filter(pl.col("n") >= 2)["method"].to_list()) or set(counts["method"])
    still = frame.filter(~pl.col("method").is_in(list(swept)))
    still = still.group_by("method", maintain_order=True).agg(pl.col(m).mean() for m in metrics)
    refs = pl.concat([f.select("method", *metrics) for f in (flat, still) if f is not None])
    lines = frame.filter(pl.col("method").is_in(list(swept)))
    numeric = lines["x_num"].null_count() == 0
    order = _x_order(lines)
    fig = Figure(figsize=(4.2 * len(metrics), 3.6), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        groups = lines.group_by("method", maintain_order=True)
        for i, ((method,), part) in enumerate(groups):
            part = part.filter(pl.col(metric).is_not_null())
            part = part.with_columns(pl.col("x").replace_strict(order, default=None).alias("_pos"))
            part = part.sort("_pos")
            xs = part["x_num"] if numeric else part["_pos"]
            style = {"color": f"C{i % 10}", "linestyle": LINESTYLES[i // 10 % len(LINESTYLES)]}
            ax.plot(xs, part[metric], marker="o", markersize=4, label=str(method), **style)
        _reference_lines(ax, refs, metric)
        if logx and numeric:
            ax.set_xscale("log")
        if numeric:
            ax.set_xticks(sorted(set(lines["x_num"].to_list())), sorted(order, key=float))
            ax.minorticks_off()
        else:
            ax.set_xticks(range(len(order)), list(order))
        ax.set_xlabel(param_label(param))
        ax.set_ylabel(axis_label(metric))
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=8)
    return fig


BASELINE = "baseline"


def _reference_lines(ax: Axes, refs: pl.DataFrame, metric: str) -> None:
    """The methods that were not swept: the baseline as a dashed line, the others as one
    grey band over their range (one legend entry however many there are)."""
    refs = refs.filter(pl.col(metric).is_not_null())
    base = refs.filter(pl.col("method") == BASELINE)
    for value in base[metric].to_list()[:1]:
        ax.axhline(value, linestyle="--", linewidth=1.2, color="0.25",
                   label=f"{BASELINE} (not swept)")  # fmt: skip
    others = refs.filter(pl.col("method") != BASELINE)
    if others.height == 1:
        ax.axhline(others[metric][0], linestyle=":", linewidth=1.2, color="0.5",
                   label=f"{others['method'][0]} (not swept)")  # fmt: skip
    elif others.height > 1:
        lo, hi = float(others[metric].min()), float(others[metric].max())  # type: ignore[arg-type]
        ax.axhspan(lo, hi, color="0.6", alpha=0.18, linewidth=0,
                   label=f"{others.height} other methods, not swept (their range)")  # fmt: skip


def _x_order(frame: pl.DataFrame) -> dict[str, int]:
    values = frame.select("x", "x_num").unique()
    ordered = values.sort(pl.col("x_num").is_null(), "x_num", "x")["x"].to_list()
    return {v: i for i, v in enumerate(ordered)}
