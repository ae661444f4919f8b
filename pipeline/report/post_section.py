"""The summary's "Inference-time methods" section and its frontier figure (SPEC §6.8,
`pipeline.report.frontier` for the rules): the dose-response table (the positive control),
the same on the judged scope and the held-out collection, the other post-processors, and
every trained method placed against the re-ranking frontier."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
from matplotlib.figure import Figure

from pipeline.errors import InputError
from pipeline.report.frontier import (
    LAMBDA,
    Point,
    curve,
    detected_doses,
    frontier_series,
    placement,
    point,
    row,
    series,
)

FAIRNESS = "NFaiRR@{k}"
"""The fairness metric of the dose-response and the frontier (the primary one)."""
MRR = "MRR@{k}"
MALE_WINS = "gap-male-wins"
FIGURE = "../plots/report/frontier.png"
"""The frontier figure as summary.md (in metrics/) links it."""


def _ci(row: Mapping[str, Any] | None, pct: bool = False) -> str:
    if row is None or row.get("diff") is None:
        return "–"
    lo, hi = row.get("ci_adj_low"), row.get("ci_adj_high")
    mark = " †" if row.get("significant") else ""
    if lo is None or hi is None:
        return f"{row['diff']:+.4f}{mark}"
    return f"{row['diff']:+.4f} [{lo:+.4f}, {hi:+.4f}]{mark}"


def detected(row: Mapping[str, Any] | None) -> str:
    """Whether the comparison detected the difference, and whether the MDE predicted it:
    a difference at least the MDE should be detected (80% power), one below it need not."""
    if row is None or row.get("diff") is None:
        return "–"
    hit, mde = bool(row.get("significant")), row.get("mde")
    if mde is None:
        return "yes" if hit else "no"
    big = abs(float(row["diff"])) >= float(mde)
    if hit:
        return "yes (≥ MDE)" if big else "yes, below the MDE"
    return "no, ≥ MDE: missed" if big else "no (< MDE)"


def dose_table(
    cmp: pl.DataFrame, names: Sequence[str], post: Mapping[str, Mapping[str, Any]], k: int
) -> list[str]:
    """One row per entry: λ, the fairness metric, its change with the adjusted interval,
    detected or not against the MDE, the MRR and male-wins changes."""
    fair, mrr = FAIRNESS.format(k=k), MRR.format(k=k)
    out = [f"| entry | λ | {fair} | change [adj. CI] | detected | MDE | {mrr} change | "
           "male-wins | change |", "|---|---:|---:|---|---|---:|---|---:|---|"]  # fmt: skip
    for name in names:
        f, e, w = (row(cmp, name, m) for m in (fair, mrr, MALE_WINS))
        if f is None:
            continue
        lam = post[name].get(LAMBDA)
        mde = "–" if f.get("mde") is None else f"{f['mde']:.4f}"
        share = "–" if w is None or w["mean"] is None else f"{100 * w['mean']:.0f}%"
        dose = "–" if lam is None else f"{lam:g}"
        out.append(f"| {name} | {dose} | {f['mean']:.4f} | {_ci(f)} | {detected(f)} | {mde} | "
                   f"{_ci(e)} | {share} | {_ci(w)} |")  # fmt: skip
    return out


def control_line(cmp: pl.DataFrame, names: Sequence[str], base: str, k: int) -> str:
    """The positive control in one sentence: the smallest λ detected and the MDE."""
    fair = FAIRNESS.format(k=k)
    rows = [(n, row(cmp, n, fair)) for n in names]
    hits = detected_doses(cmp, names, fair)
    missed = [n for n, r in rows if r is not None and detected(r).startswith("no, ≥")]
    if not hits:
        return (f"**Positive control: not detected.** No λ of this series moves {fair} beyond "
                "noise: the design cannot show an effect of this size.")  # fmt: skip
    n, r = hits[0]
    return (f"**Positive control: detected.** Re-ranking `{base}` by neutrality moves {fair} "
            f"beyond noise from `{n}` on ({r['diff']:+.4f}, MDE {r['mde']:.4f}); "
            f"{len(hits)} of {len(rows)} doses detected"
            + (f"; missed although ≥ MDE: {missed}" if missed else "; none ≥ MDE missed")
            + ". A λ of 0 is the base's own ranking (difference 0 on every query).")


def post_markdown(
    post_cmp: pl.DataFrame, cmp: pl.DataFrame, post: Mapping[str, Mapping[str, Any]],
    baseline: str, k: int, scopes: Mapping[str, tuple[str, pl.DataFrame]],
) -> str:  # fmt: skip
    """The section (module docstring). ``scopes``: the judged scope's and the held-out
    collection's comparisons of the entries, by title, with the metric prefix (``judged``,
    ``transfer``) of the trained methods' rows of that scope in ``cmp``."""
    groups = series(post)
    frontier = next((g for g in groups if len(g) >= 3), None)
    md = ["## Inference-time methods: re-ranking the baseline's own scores (no training)", "",
          f"Each `post:` entry re-ranks every seed's run of its base (params.yaml; SPEC §6.8) "
          f"and is compared with `{baseline}` by the same test as the trained methods, the "
          f"entries forming their own Bonferroni family ({_tested(post)} entries; the trained "
          "methods' levels are unchanged; entries on `zero-shot` are shown, not tested). † the "
          "adjusted interval excludes 0. *detected* says whether the MDE predicted it (80% "
          "power at ≥ MDE).", ""]  # fmt: skip
    for names in groups:
        first = post[names[0]]
        title = ", ".join(f"{key} {v}" for key, v in first.items() if key != LAMBDA)
        md += [f"### {title}", "", *dose_table(post_cmp, names, post, k), ""]
        if names is frontier:
            md += [control_line(post_cmp, names, str(first.get("base")), k), ""]
    if frontier is not None:
        md += _placements(cmp, post_cmp, frontier, post, baseline, k)
        for title, (prefix, scoped) in scopes.items():
            mine = cmp.filter(pl.col("metric").str.starts_with(f"{prefix}.")).with_columns(
                pl.col("metric").str.strip_prefix(f"{prefix}."))  # fmt: skip
            md += [f"### The dose-response {title}", "",
                   *dose_table(scoped, frontier, post, k), "",
                   "Every trained method against this scope's frontier:", "",
                   *_placement_lines(mine, scoped, frontier, post, baseline, k), ""]  # fmt: skip
    return "\n".join(md) + "\n"


def _tested(post: Mapping[str, Mapping[str, Any]]) -> int:
    return sum(1 for s in post.values() if s.get("base") != "zero-shot")


def _placements(
    cmp: pl.DataFrame, post_cmp: pl.DataFrame, frontier: Sequence[str],
    post: Mapping[str, Mapping[str, Any]], baseline: str, k: int,
) -> list[str]:  # fmt: skip
    fair, mrr = FAIRNESS.format(k=k), MRR.format(k=k)
    head = f"### Findings: every trained method against the re-ranking frontier ({fair} vs {mrr})"
    out = [head, "",
           f"The frontier: `{frontier[0]}` … `{frontier[-1]}`. Noise: the root sum of "
           f"squares of the half-widths of the method's and the frontier's Bonferroni-level "
           f"{mrr} intervals.", "",
           f"![Trained methods against the re-ranking frontier]({FIGURE})", ""]  # fmt: skip
    return [*out, *_placement_lines(cmp, post_cmp, frontier, post, baseline, k), ""]


def _placement_lines(
    cmp: pl.DataFrame, post_cmp: pl.DataFrame, frontier: Sequence[str],
    post: Mapping[str, Mapping[str, Any]], baseline: str, k: int,
) -> list[str]:  # fmt: skip
    """One line per trained method of ``cmp``: where it lies against the frontier that the
    entries ``frontier`` trace in ``post_cmp`` (the same scope's comparisons)."""
    fair, mrr = FAIRNESS.format(k=k), MRR.format(k=k)
    points = curve(post_cmp, frontier, post, fair, mrr)
    base = str(post[frontier[0]].get("base"))
    tested = cmp.filter(pl.col("diff").is_not_null())["method"].unique(maintain_order=True)
    out = []
    for m in tested:
        p = point(cmp, m, fair, mrr)
        if p is not None and m != baseline:
            out.append(f"- **{m}**: {placement(p, points, base)}.")
    return out


def frontier_figure(
    cmp: pl.DataFrame, post_cmp: pl.DataFrame, frontier: Sequence[str],
    post: Mapping[str, Mapping[str, Any]], k: int, reference: Sequence[str] = (),
) -> Figure:  # fmt: skip
    """Two panels (fairness, male-wins) against MRR: the frontier as a line with its λ
    values, every trained method as a numbered point (legend below), each point with its
    Bonferroni-level intervals as whiskers; the MRR axis spans at least the baseline ± MDE."""
    fig = Figure(figsize=(11.0, 5.6))
    mrr = MRR.format(k=k)
    tested = cmp.filter((pl.col("metric") == mrr) & pl.col("diff").is_not_null())
    methods = [m for m in tested["method"].unique(maintain_order=True) if m not in reference]
    for i, metric in enumerate((FAIRNESS.format(k=k), MALE_WINS)):
        ax = fig.add_subplot(1, 2, i + 1)
        line = curve(post_cmp, frontier, post, metric, mrr)
        _whiskers(ax, line, "C3", post_cmp, metric, mrr)
        ax.plot([p.mrr for p in line], [p.effect for p in line], "-", color="C3", lw=1.2,
                label=f"re-ranking frontier ({frontier[0]} … {frontier[-1]})")  # fmt: skip
        for p in line:
            ax.annotate(f"λ {p.lam:g}", (p.mrr, p.effect), fontsize=7, color="C3",
                        xytext=(4, -9), textcoords="offset points")  # fmt: skip
        pts = [q for q in (point(cmp, m, metric, mrr) for m in methods) if q is not None]
        _whiskers(ax, pts, "0.3", cmp, metric, mrr, alpha=0.35)
        _mde_span(ax, cmp, mrr)
        lo, hi = ax.get_ylim()  # both are shares: nothing beyond [0, 1]
        ax.set_ylim(max(lo, -0.02), min(hi, 1.02))
        _numbers(ax, pts)
        ax.set_xlabel(f"{mrr} ↑", fontsize=9)
        ax.set_ylabel(f"{metric} {'↑ fairer' if i == 0 else '(½ = balanced)'}", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=8)
        ax.legend(fontsize=7, loc="best")
    names = "   ".join(f"{j} {q}" for j, q in enumerate(methods, start=1))
    fig.text(0.01, -0.02, _wrap(names, 170), fontsize=7, va="top", family="monospace")
    fig.suptitle("Trained methods against re-ranking the baseline's scores (whiskers: "
                 "Bonferroni-level intervals)", fontsize=10)  # fmt: skip
    return fig


def _numbers(ax: Any, pts: Sequence[Point]) -> None:
    """Each method's number beside its point; points within 1/40 of both axes of each other
    share one label ("16,26"), so no number hides another."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    dx, dy = (x1 - x0) or 1.0, (y1 - y0) or 1.0
    cells: dict[tuple[int, int], list[tuple[int, Point]]] = {}
    for j, q in enumerate(pts, start=1):
        cells.setdefault((round(q.mrr / dx * 40), round(q.effect / dy * 40)), []).append((j, q))
    for members in cells.values():
        j, q = members[0]
        ax.annotate(",".join(str(i) for i, _ in members), (q.mrr, q.effect), fontsize=7,
                    xytext=(3, 3), textcoords="offset points", zorder=5)  # fmt: skip


def _whiskers(
    ax: Any, pts: Sequence[Point], color: str, cmp: pl.DataFrame, metric: str, mrr: str,
    alpha: float = 1.0,
) -> None:  # fmt: skip
    for p in pts:
        f, e = row(cmp, p.name, metric), row(cmp, p.name, mrr)
        err = {"xerr": _err(e, p.mrr), "yerr": _err(f, p.effect)}
        bars = ax.errorbar(p.mrr, p.effect, **err, fmt="o", ms=4, color=color, elinewidth=0.7,
                           capsize=2, zorder=3)  # fmt: skip
        for line in bars.lines[2]:  # the whiskers only: the points stay solid
            line.set_alpha(alpha)


def _err(row: Mapping[str, Any] | None, mean: float) -> list[list[float]] | None:
    """The whisker lengths below and above ``mean``: the adjusted interval of the
    difference placed on the baseline's mean."""
    if row is None or row.get("ci_adj_low") is None or row.get("baseline") is None:
        return None
    lo, hi = row["baseline"] + row["ci_adj_low"], row["baseline"] + row["ci_adj_high"]
    return [[max(mean - lo, 0.0)], [max(hi - mean, 0.0)]]


def _mde_span(ax: Any, cmp: pl.DataFrame, mrr: str) -> None:
    rows = cmp.filter((pl.col("metric") == mrr) & pl.col("mde").is_not_null())
    if not rows.height:
        return
    base, mde = float(rows["baseline"][0]), float(rows["mde"].mean())  # type: ignore[arg-type]
    lo, hi = ax.get_xlim()
    ax.set_xlim(min(lo, base - mde), max(hi, base + mde))
    ax.axvspan(base - mde, base + mde, color="0.9", zorder=0, label=f"baseline ± MRR MDE {mde:.3f}")


def _wrap(text: str, width: int) -> str:
    words, lines, line = text.split("   "), [], ""
    for w in words:
        if len(line) + len(w) + 3 > width:
            lines.append(line)
            line = ""
        line = f"{line}   {w}" if line else w
    return "\n".join([*lines, line])


def post_report(
    views: Mapping[str, Mapping[str, Any]], baseline: str, post: Mapping[str, Mapping[str, Any]],
    cmp: pl.DataFrame, k: int, *, alpha: float, correction: str, folds: pl.DataFrame | None,
) -> tuple[str, pl.DataFrame, Figure | None]:  # fmt: skip
    """The entries compared with ``baseline`` over the views of the report's table
    (``pipeline.report.tidy.views``: main, judged scope, held-out collection; the entries on
    ``zero-shot`` shown, not tested), the section's markdown, the comparison rows for
    comparison.csv (``judged.``/``transfer.`` metric prefixes) and the frontier figure."""
    from pipeline.report import tidy
    from pipeline.report.scopes import JUDGED, scope_comparison
    from pipeline.report.significance import compare
    from pipeline.report.transfer import TRANSFER, transfer_comparison

    names = [baseline, *post]
    untested = [e for e, s in post.items() if s.get("base") == "zero-shot"]
    per_query = tidy.pick(views[tidy.ALL], names)
    if per_query is None:
        raise InputError(f"post entries {names}: some have no per-query values in eval/")
    post_cmp = compare(per_query, baseline, reference=untested, alpha=alpha,
                       correction=correction, folds=folds)  # fmt: skip
    judged = scope_comparison(views.get(JUDGED, {}), names, baseline, untested, alpha,
                              correction, folds=folds)  # fmt: skip
    moved = transfer_comparison(views.get(TRANSFER, {}), names, baseline, untested, alpha,
                                correction)  # fmt: skip
    scopes = {f"over each query's judged documents ({JUDGED})": (JUDGED, judged),
              "on the held-out collection (transfer)": (TRANSFER, moved)}  # fmt: skip
    shown = {t: (prefix, c) for t, (prefix, c) in scopes.items() if c is not None}
    md = post_markdown(post_cmp, cmp, post, baseline, k, shown)
    rows = [post_cmp]
    for prefix, c in ((JUDGED, judged), (TRANSFER, moved)):
        if c is not None:
            named = pl.format("{}.{}", pl.lit(prefix), "metric").alias("metric")
            rows.append(c.with_columns(named))
    out = pl.concat(rows).filter(pl.col("method") != baseline)
    frontier = frontier_series(post)
    fig = None if frontier is None else frontier_figure(cmp, post_cmp, frontier, post, k,
                                                        reference=[baseline])  # fmt: skip
    return md, out, fig
