"""Figures of the report (matplotlib, Agg, no pyplot state): trade-off scatter, training curves,
curriculum bucket probabilities and parameter sweeps. Every figure function is pure (frames in,
`Figure` out); `save_png` writes a figure atomically.

Axis labels carry the metric's direction (`axis_label`): `MRR@10 ↑`, `NFaiRR@10 ↑ fairer`,
`|ARaB-tf|@10 ↓ fairer`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

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
_LABEL_PT = 8.0  # font size of the point labels
_PALETTE = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9")  # no grey (C7): reference


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


def _label_column(
    ax: Axes,
    xs: Sequence[float],
    ys: Sequence[float],
    labels: Sequence[str],
    colors: Sequence[str],
) -> None:
    """Write the labels in a column right of the axes, in the order of their points' heights,
    each joined to its point by a thin leader line in its colour. Neighbouring labels sit at
    least one text line apart, so none overlaps another however tightly the points cluster.
    Call it once the axis limits are final."""
    fig = ax.get_figure()
    assert isinstance(fig, Figure)
    renderer = FigureCanvasAgg(fig).get_renderer()
    height = max(ax.get_window_extent(renderer).height, 1.0)
    gap = 1.3 * _LABEL_PT * fig.dpi / 72 / height  # one text line, in axes fraction
    to_axes = ax.transAxes.inverted()
    wanted = [
        float(to_axes.transform(ax.transData.transform((x, y)))[1])
        for x, y in zip(xs, ys, strict=True)
    ]
    order = sorted(range(len(labels)), key=lambda i: (wanted[i], labels[i]))
    placed = _spread([min(max(wanted[i], 0.0), 1.0) for i in order], gap)
    for i, y in zip(order, placed, strict=True):
        ax.annotate(
            labels[i], (xs[i], ys[i]), xytext=(1.04, y), textcoords="axes fraction",
            fontsize=_LABEL_PT, color=colors[i], ha="left", va="center", annotation_clip=False,
            arrowprops={"arrowstyle": "-", "color": colors[i], "lw": 0.5, "alpha": 0.6,
                        "shrinkA": 0, "shrinkB": 3},
        )  # fmt: skip


def _spread(wanted: Sequence[float], gap: float) -> list[float]:
    """Ascending positions, each as close to its ``wanted`` one as at least ``gap`` between
    neighbours allows, kept at or below 1 (the top of the axes)."""
    out: list[float] = []
    for w in wanted:
        out.append(max(w, out[-1] + gap) if out else w)
    if out and out[-1] > 1.0:
        out[-1] = 1.0
        for k in range(len(out) - 2, -1, -1):
            out[k] = min(out[k], out[k + 1] - gap)
    return out


def tradeoff_figure(
    points: pl.DataFrame,
    x: str,
    y: str,
    *,
    baseline: str | None = None,
    reference: Collection[str] = (),
    title: str | None = None,
) -> Figure:
    """Scatter of `y` (fairness) against `x` (effectiveness), one labelled point per method.

    `points` has a `method` column and the columns `x`, `y`; rows with a null are dropped. The
    baseline is drawn as a square, reference rows (the first-stage ranking) in grey. Labels
    stand in a column right of the axes (`_label_column`), the marker legend below them.
    """
    data = points.select("method", x, y).drop_nulls()
    rows = max(data.height, 1)
    fig = Figure(figsize=(7.0, max(4.2, 0.19 * rows + 1.6)))
    ax = fig.add_axes((0.12, 0.16, 0.58, 0.76))
    colors: list[str] = []
    for row in data.iter_rows(named=True):
        m = row["method"]
        color = "0.45" if m in reference else _PALETTE[sum(c != "0.45" for c in colors) % 9]
        marker = "D" if m in reference else "s" if m == baseline else "o"
        ax.scatter([row[x]], [row[y]], s=46, marker=marker, color=color, alpha=0.85, zorder=3)
        colors.append(color)
    ax.margins(x=0.08, y=0.08)
    ax.autoscale_view()
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    _label_column(ax, data[x].to_list(), data[y].to_list(), data["method"].to_list(), colors)
    _marker_legend(ax, baseline, reference)
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y))
    ax.set_title(title or f"{axis_label(y).split(' ')[0]} vs {x}", fontsize=10)
    ax.grid(True, alpha=0.3)
    return fig


def _marker_legend(ax: Axes, baseline: str | None, reference: Collection[str]) -> None:
    handles = [Line2D([], [], marker="o", linestyle="", color="0.2", label="method")]
    if baseline is not None:
        handles.append(Line2D([], [], marker="s", linestyle="", color="0.2", label="baseline"))
    if reference:
        handles.append(Line2D([], [], marker="D", linestyle="", color="0.45", label="first stage"))
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1),
              ncol=len(handles), frameon=False)  # fmt: skip


def training_figure(curves: Mapping[str, pl.DataFrame]) -> Figure:
    """Training loss (top) and learning rate (bottom) against step, one line per method.

    Each curve has the columns `step, loss, lr` (a method's mean over its fold models, from
    its DVCLive files `dvclive/<method>/`).
    """
    fig = Figure(figsize=(9.0, 5.2), layout="constrained")
    loss_ax, lr_ax = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    for i, (method, curve) in enumerate(curves.items()):
        # 10 colours × 4 dash styles: up to 40 methods stay distinguishable
        style = {"color": f"C{i % 10}", "linestyle": LINESTYLES[i // 10 % len(LINESTYLES)]}
        loss_ax.plot(curve["step"], curve["loss"], label=method, linewidth=1.2, **style)
        lr_ax.plot(curve["step"], curve["lr"], linewidth=1.0, **style)
    loss_ax.set_ylabel("training loss ↓")
    loss_ax.grid(True, alpha=0.3)
    fig.legend(loc="outside right upper", fontsize=7, title="method", title_fontsize=8)
    lr_ax.set_ylabel("learning rate")
    lr_ax.set_xlabel("step")
    lr_ax.grid(True, alpha=0.3)
    return fig


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
