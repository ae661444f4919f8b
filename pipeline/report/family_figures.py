"""The report's trade-off and training figures as small multiples, one panel per family of
methods, so that 28 methods stay readable at 100% zoom.

A family groups methods that a reader compares with each other (`method_families`, from
each method's params entry: its ordering and its first loss term beside the margin); a
control sits with the method it controls. Every trade-off panel draws all methods in light
grey for context, the family's methods in colour with a legend below the panel (no labels
in the data, so none can overlap), the baseline as a black square and the reference rows
(`bm25`, `zero-shot`) as grey diamonds. The axes are scaled to the trained methods: a
reference row outside them is drawn on the edge as a hollow diamond, its true values in the
legend. Each method carries whiskers: the family-wise (Bonferroni) interval of its difference
from the baseline, drawn around the baseline's value on each axis (`Interval`, from the
comparison's ``ci_adj_*``), so a point whose whisker crosses the baseline's line is no
detectable difference; each axis spans at least the baseline ± the largest MDE of that metric,
so a cloud of points inside one MDE looks as small as it is (issue 41: the MRR axis spanned
half the MRR MDE). Training curves: one panel per family, each with its own loss scale (one
loss of a 10× adversary no longer flattens the others), and the learning-rate schedules below.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pipeline.report.plots import LINESTYLES, axis_label

OTHERS = "methods"
MARKERS = ("o", "^", "v", "P", "X", "*", "<", ">", "h")
REFERENCE_COLOR = "0.45"
CONTEXT_COLOR = "0.82"


def method_family(entry: Mapping[str, Any]) -> str:
    """The family of a `methods:` entry (its `ordering` and `loss`): the curriculum, data
    selection (filters, their size controls, LWS), pairwise or pointwise penalty/reward
    terms, other loss terms (listwise, adversarial), or the plain margin loss."""
    ordering = str(entry.get("ordering", ""))
    loss = entry.get("loss", {})  # term → settings (a list in earlier records)
    items = list(loss) if isinstance(loss, Mapping) else [loss] if isinstance(loss, str) else loss
    terms = [str(t["name"]) if isinstance(t, Mapping) else str(t) for t in items or []]
    term = next((t for t in terms if t != "margin"), None)
    if ordering == "curriculum":
        return "curriculum"
    if ordering in ("neutral_only", "biased_only", "size_matched", "lws"):
        return "data selection (filters, LWS)"
    if term is None:
        return "margin loss (baseline, batch control)"
    if term.startswith("pointwise_"):
        return "pointwise penalty / reward"
    if term.startswith(("penalty", "reward")):
        return "pairwise penalty / reward"
    return "listwise and adversarial terms"


def method_families(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """method → family, in params order."""
    return {m: method_family(e) for m, e in entries.items()}


def _grid(n: int, width: float, height: float) -> tuple[Figure, list[Axes]]:
    cols = 1 if n == 1 else 2 if n <= 4 else 3
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = list(fig.subplots(rows, cols, squeeze=False).flat)
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


@dataclass(frozen=True)
class Interval:
    """A method's family-wise interval on one axis, in the metric's own units (absolute)."""

    low: float
    high: float


Whiskers = Mapping[str, Mapping[str, Interval]]
"""metric → method → its interval (the report's comparison rows, `whiskers`)."""


def whiskers(cmp: pl.DataFrame, metrics: Sequence[str]) -> tuple[Whiskers, dict[str, float]]:
    """Each method's family-wise interval per metric (baseline + ``ci_adj_low/high``) and
    each metric's largest MDE over the compared methods, from a comparison frame."""
    out: dict[str, dict[str, Interval]] = {}
    mde: dict[str, float] = {}
    for r in cmp.filter(pl.col("metric").is_in(list(metrics))).iter_rows(named=True):
        lo, hi, base = r.get("ci_adj_low"), r.get("ci_adj_high"), r.get("baseline")
        if lo is not None and hi is not None and base is not None:
            out.setdefault(r["metric"], {})[r["method"]] = Interval(base + lo, base + hi)
        if r.get("mde") is not None:
            mde[r["metric"]] = max(mde.get(r["metric"], 0.0), float(r["mde"]))
    return out, mde


def _limits(values: Sequence[float], pad: float = 0.08) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    span = (hi - lo) or abs(hi) or 1.0
    return lo - pad * span, hi + pad * span


def _axis(values: Sequence[float], spans: Sequence[Interval], centre: float | None,
          mde: float | None) -> tuple[float, float]:  # fmt: skip
    """An axis's limits: the values, their whiskers and, around the baseline, ± the MDE."""
    ends = [*values, *(i.low for i in spans), *(i.high for i in spans)]
    if centre is not None and mde:
        ends += [centre - mde, centre + mde]
    return _limits(ends)


def tradeoff_figure(
    points: pl.DataFrame,
    x: str,
    y: str,
    *,
    baseline: str | None = None,
    reference: Collection[str] = (),
    title: str | None = None,
    families: Mapping[str, str] | None = None,
    intervals: Whiskers | None = None,
    mde: Mapping[str, float] | None = None,
) -> Figure:
    """`y` (fairness) against `x` (effectiveness), one panel per family (module doc).

    `points` has a `method` column and the columns `x`, `y`; rows with a null are dropped.
    `families`: method → family (`method_families`); without it, one panel. `intervals`,
    `mde`: each method's whiskers and each metric's MDE (`whiskers`).
    """
    spans = intervals or {}
    data = points.select("method", x, y).drop_nulls()
    rows = {r["method"]: (float(r[x]), float(r[y])) for r in data.iter_rows(named=True)}
    trained = {m: v for m, v in rows.items() if m not in reference}
    fam = {m: (families or {}).get(m, OTHERS) for m in trained}
    panels = list(dict.fromkeys(f for m, f in fam.items() if m != baseline)) or [OTHERS]
    fig, axes = _grid(len(panels), 4.6, 4.3)
    centre = rows.get(baseline) if baseline else None
    xlim = _axis([v[0] for v in (trained or rows).values()], list(spans.get(x, {}).values()),
                 centre[0] if centre else None, (mde or {}).get(x))  # fmt: skip
    ylim = _axis([v[1] for v in (trained or rows).values()], list(spans.get(y, {}).values()),
                 centre[1] if centre else None, (mde or {}).get(y))  # fmt: skip
    for ax, family in zip(axes, panels, strict=True):
        ax.scatter([v[0] for v in trained.values()], [v[1] for v in trained.values()], s=14,
                   color=CONTEXT_COLOR, zorder=1)  # fmt: skip
        members = [m for m, f in fam.items() if f == family and m != baseline]
        for i, m in enumerate(members):
            ax.scatter(*rows[m], s=44, marker=MARKERS[i % len(MARKERS)], color=f"C{i % 10}",
                       label=m, zorder=3)  # fmt: skip
            _whiskers(ax, rows[m], spans.get(x, {}).get(m), spans.get(y, {}).get(m), f"C{i % 10}")
        if baseline in rows:
            ax.scatter(*rows[baseline], s=50, marker="s", color="black", label=baseline, zorder=4)
        for r in (r for r in reference if r in rows):
            _reference_point(ax, r, rows[r], xlim, ylim)
        ax.set(xlim=xlim, ylim=ylim, title=family)
        ax.title.set_fontsize(9)
        ax.set_xlabel(axis_label(x), fontsize=8)
        ax.set_ylabel(axis_label(y), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
                  frameon=False, handletextpad=0.3, columnspacing=1.0)  # fmt: skip
    fig.suptitle(title or f"{axis_label(y).split(' ')[0]} vs {x}", fontsize=11)
    return fig


def _whiskers(ax: Axes, xy: tuple[float, float], wx: Interval | None, wy: Interval | None,
              color: str) -> None:  # fmt: skip
    """A method's intervals as thin bars through its point (horizontal: x, vertical: y)."""
    if wx is not None:
        ax.plot([wx.low, wx.high], [xy[1], xy[1]], color=color, linewidth=0.9, alpha=0.7,
                zorder=2)  # fmt: skip
    if wy is not None:
        ax.plot([xy[0], xy[0]], [wy.low, wy.high], color=color, linewidth=0.9, alpha=0.7,
                zorder=2)  # fmt: skip


def _reference_point(
    ax: Axes, name: str, xy: tuple[float, float], xlim: tuple[float, float],
    ylim: tuple[float, float],
) -> None:  # fmt: skip
    """A reference row: a grey diamond, or on the nearest edge (hollow) when it lies outside
    the methods' axes, its values in the legend."""
    cx, cy = min(max(xy[0], xlim[0]), xlim[1]), min(max(xy[1], ylim[0]), ylim[1])
    outside = (cx, cy) != xy
    label = f"{name} ({xy[0]:.3f}, {xy[1]:.3f}; off the axes)" if outside else name
    ax.scatter(cx, cy, s=48, marker="D", zorder=2, label=label, clip_on=False,
               facecolors="none" if outside else REFERENCE_COLOR,
               edgecolors=REFERENCE_COLOR)  # fmt: skip


def _log_if_spread(ax: Axes, curves: Sequence[pl.DataFrame], ratio: float = 4.0) -> str:
    """A log loss axis when one curve's level dwarfs another's (a 10× adversary beside a
    margin loss), so every curve keeps its shape; the label's suffix."""
    means = [float(c["loss"].mean()) for c in curves]  # type: ignore[arg-type]
    positive = all(float(c["loss"].min()) > 0 for c in curves)  # type: ignore[arg-type]
    if len(means) > 1 and positive and max(means) > ratio * min(means):
        ax.set_yscale("log")
        return " (log scale)"
    return ""


def training_figure(
    curves: Mapping[str, pl.DataFrame], families: Mapping[str, str] | None = None
) -> Figure:
    """Training loss against step, one panel per family with its own loss scale (module
    doc), and one panel of every method's learning rate.

    Each curve has the columns `step, loss, lr` (a method's mean over its fold models, from
    its DVCLive files `dvclive/<method>/`)."""
    fam = {m: (families or {}).get(m, OTHERS) for m in curves}
    panels = list(dict.fromkeys(fam.values()))
    fig, axes = _grid(len(panels) + 1, 4.6, 3.0)
    for ax, family in zip(axes, panels, strict=False):
        for i, m in enumerate(m for m in curves if fam[m] == family):
            dash = LINESTYLES[i // 10 % len(LINESTYLES)]
            ax.plot(curves[m]["step"], curves[m]["loss"], label=m, linewidth=1.2,
                    color=f"C{i % 10}", linestyle=dash)  # fmt: skip
        ax.set_title(family, fontsize=9)
        ax.set_ylabel("training loss ↓" + _log_if_spread(ax, [curves[m] for m in fam
                                                              if fam[m] == family]), fontsize=8)
        ax.legend(fontsize=6.5, frameon=False)
    lr_ax = axes[-1]
    schedules: dict[tuple[tuple[float, float], ...], list[str]] = {}
    for m, curve in curves.items():
        schedules.setdefault(tuple(zip(curve["step"], curve["lr"], strict=True)), []).append(m)
    for i, (points, names) in enumerate(schedules.items()):
        shown = ", ".join(names) if len(names) <= 3 else f"{len(names)} methods"
        lr_ax.plot(*zip(*points, strict=True), linewidth=1.2, color=f"C{i % 10}", label=shown)
    lr_ax.legend(fontsize=6.5, frameon=False)
    lr_ax.set_title("learning rate (one line per schedule)", fontsize=9)
    lr_ax.set_ylabel("learning rate", fontsize=8)
    for ax in axes:
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(which="both", labelsize=7)
        ax.grid(True, alpha=0.3)
    return fig
