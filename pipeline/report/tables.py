"""Summary tables of per-method metrics: one row per method, Markdown and CSV."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from pipeline.metrics import MEASURES
from pipeline.metrics.common import Measure


def _keys(role: str, per_cutoff: bool) -> tuple[str, ...]:
    """Keys of the measures shown in the report's ``role`` tables (records' order)."""
    return tuple(m.key for m in MEASURES if m.table == role and m.per_cutoff == per_cutoff)


def change_columns(keys: Sequence[str]) -> tuple[str, ...]:
    """The % change table's columns: a signed measure's magnitude in its place (a % change of
    a signed value that may cross zero says nothing about fairness); a signed measure
    without one is left out."""
    out: list[str] = []
    for key in keys:
        m = next(m for m in MEASURES if m.key == key)
        shown = (m.magnitude if m.signed else key) or ""
        if shown and shown not in out:
            out.append(shown)
    return tuple(out)


# Paper-style tables from `pipeline.report.significance.compare` (one row per method, metric),
# read from the metric records (pipeline/metrics): `{k}` is the cut-off.
# (a) absolute values, as the curriculum paper's Tables 1-2: core columns, then extras.
ABS_AT_K = _keys("core", True) + _keys("extra", True)
# (b) % change vs the baseline, as the regularisation paper's Tables 1-4.
CHANGE_AT_K = change_columns(ABS_AT_K)
OVERALL = _keys("overall", False)
CHANGE_OVERALL = change_columns(OVERALL)
EFFECTIVE = next(m for m in MEASURES if not m.fairness and m.table == "core")
"""The x axis of every trade-off plot: the first ``core`` effectiveness measure (MRR)."""
PLOTTED = sorted((m for m in MEASURES if m.tradeoff), key=lambda m: m.tradeoff or (0, ""))
"""The y axes, one trade-off plot each: the measures with ``tradeoff=(place, file stem)``."""
SIGN_TESTED = {m.key: m.sign_test for m in MEASURES if m.sign_test}
"""The direction table's columns (SPEC §4.9): measure key → its title, from the records."""
DIRECTION = {m.base: m.direction for m in MEASURES}
# Signed columns (direction →0 / →0.5): a significant difference from the baseline may be a
# sign flip (e.g. −0.16 → +0.11), not a fairer ranking, so they carry no † (issue 14 item 7);
# their magnitudes (`-abs`, gap-abs) carry it.
SIGNED = frozenset(m.base for m in MEASURES if m.signed)
MARK = "†"
CORRECTION_NAMES = {"bonferroni": "Bonferroni", "holm": "Holm-Bonferroni"}


def summary_frame(metrics: Mapping[str, Mapping[str, object]]) -> pl.DataFrame:
    """All numeric metric keys of every method, one row per method (in the given order)."""
    keys: list[str] = []
    for values in metrics.values():
        keys += [k for k, v in values.items() if _numeric(v) and k not in keys]
    rows = [
        {"method": m, **{k: _as_float(values.get(k)) for k in keys}}
        for m, values in metrics.items()
    ]
    schema = {"method": pl.Utf8, **{k: pl.Float64 for k in keys}}
    return pl.DataFrame(rows, schema=schema)


def _numeric(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _as_float(v: object) -> float | None:
    return float(v) if _numeric(v) else None  # type: ignore[arg-type]


def _header(key: str) -> str:
    base = key.split("@")[0]
    arrow = DIRECTION.get(base, "")
    return f"{key} {arrow}".strip()


def markdown_table(df: pl.DataFrame, columns: Sequence[str], digits: int = 4) -> str:
    """A Markdown table of `columns` (those present) with the method as first column."""
    cols = [c for c in columns if c in df.columns]
    lines = [
        "| method | " + " | ".join(_header(c) for c in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for row in df.iter_rows(named=True):
        cells = ["" if row[c] is None else f"{row[c]:.{digits}f}" for c in cols]
        lines.append(f"| {row['method']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def unmark_saturated(cmp: pl.DataFrame, why: Mapping[str, str]) -> tuple[pl.DataFrame, str]:
    """``cmp`` with ``significant`` false on the metrics a collection saturates by its
    construction (``why``: metric base → reason, its source record's ``saturated``; issue 21),
    and the legend's note saying why they carry no †."""
    if not why:
        return cmp, ""
    base = pl.col("metric").str.split("@").list.first()
    out = cmp.with_columns(
        pl.when(base.is_in(list(why))).then(False).otherwise(pl.col("significant"))
        .alias("significant")
    )  # fmt: skip
    note = " ".join(f"{metric} carries no {MARK}: {reason}." for metric, reason in why.items())
    return out, note


def marks_significance(metric: str) -> bool:
    """Whether a table marks `metric` with † (not the signed ARaB / gap columns)."""
    return metric.split("@")[0] not in SIGNED


def _mark(row: Mapping[str, object]) -> str:
    return MARK if row["significant"] and marks_significance(str(row["metric"])) else ""


def _abs_cell(row: Mapping[str, object] | None, digits: int) -> str:
    if row is None or row["mean"] is None:
        return ""
    text = f"{row['mean']:.{digits}f}"
    if row["std"] is not None:
        text += f" ± {row['std']:.{digits}f}"
    return text + _mark(row)


def ci_pct(row: Mapping[str, object]) -> tuple[float, float] | None:
    """The interval of the difference at the family-wise (Bonferroni) level, the level of
    `†` and of the Findings, in % of |baseline| (the unit of `change_pct`), or null. (The
    unadjusted 95% interval contradicted the Findings: an nDCG@10 change of −1.50%
    [−2.7, −0.3] beside "no detectable difference in nDCG@10", issue 41.)"""
    lo, hi, base = row.get("ci_adj_low"), row.get("ci_adj_high"), row.get("baseline")
    if lo is None or hi is None or base is None or base == 0:
        return None
    scale = 100.0 / abs(float(base))  # type: ignore[arg-type]
    return float(lo) * scale, float(hi) * scale  # type: ignore[arg-type]


def _change_cell(row: Mapping[str, object] | None, digits: int) -> str:
    if row is None or row["change_pct"] is None:
        return ""
    text = f"{row['change_pct']:+.{digits}f}%" + _mark(row)
    ci = ci_pct(row)
    if ci is not None:
        text += f" [{ci[0]:+.{max(digits - 1, 0)}f}, {ci[1]:+.{max(digits - 1, 0)}f}]"
    return text


def comparison_table(
    cmp: pl.DataFrame,
    columns: Sequence[str],
    *,
    change: bool = False,
    digits: int | None = None,
    skip: Sequence[str] = (),
) -> str:
    """A Markdown table from a comparison frame: absolute `mean[ ± std]` cells (default) or
    `+x.xx% [lo, hi]` changes with the 95% CI in % of |baseline| (`change=True`); `†`
    marks a significant difference from the baseline (not on the signed columns `SIGNED`)."""
    digits = (2 if change else 4) if digits is None else digits
    cell = _change_cell if change else _abs_cell
    rows = {(r["method"], r["metric"]): r for r in cmp.iter_rows(named=True)}
    present = set(cmp["metric"].to_list())
    cols = [c for c in columns if c in present]
    methods = [m for m in dict.fromkeys(cmp["method"].to_list()) if m not in skip]
    lines = [
        "| method | " + " | ".join(_header(c) for c in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for m in methods:
        cells = [cell(rows.get((m, c)), digits) for c in cols]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report_markdown(
    cmp: pl.DataFrame,
    cutoffs: Sequence[int],
    baseline: str,
    *,
    reference: Sequence[str] = (),
    info: Mapping[str, str] | None = None,
    alpha: float = 0.05,
    correction: str = "bonferroni",
    note: str = "",
) -> str:
    """The paste-ready summary: per cut-off an absolute table (a) and a change table (b);
    ``note`` is appended to the legend."""
    compared = [
        m for m in dict.fromkeys(cmp["method"].to_list()) if m not in {baseline, *reference}
    ]
    seeds = max(cmp["n_seeds"].drop_nulls().to_list(), default=1)
    parts = ["# Summary", ""]
    if info:
        parts += [", ".join(f"{k}: `{v}`" for k, v in info.items()), ""]
    parts += [_legend(baseline, reference, len(compared), alpha, seeds, correction)
              + (f" {note}" if note else ""), ""]  # fmt: skip
    skip = [baseline, *reference]
    change_title = f"### Change vs `{baseline}` (%) [family-wise 95% interval, % of |{baseline}|]"
    for k in cutoffs:
        parts += [f"## Cut-off {k}", "", comparison_table(cmp, [c.format(k=k) for c in ABS_AT_K])]
        parts += ["", change_title, ""]
        parts += [
            comparison_table(cmp, [c.format(k=k) for c in CHANGE_AT_K], change=True, skip=skip)
        ]
        parts += [""]
    if set(OVERALL) & set(cmp["metric"].to_list()):
        parts += [
            "## Counterfactual gender gap (rank of female − rank of male relevant version)",
            "",
            comparison_table(cmp, OVERALL, digits=3),
            "",
            change_title,
            "",
            comparison_table(cmp, CHANGE_OVERALL, change=True, skip=skip),
            "",
            "## Direction: which version a method ranks first",
            "",
            DIRECTION_LEGEND.format(baseline=baseline),
            "",
            direction_table(cmp, skip),
            "",
        ]
    return "\n".join(parts)


DIRECTION_LEGEND = (
    "Per query and seed: signed gap = rank(female) − rank(male) of the relevant versions "
    "(positive: the male version ranks higher); male wins = the male version above the female "
    "one (ties count ½); neutral first = the neutral version above both. Cells: mean ± std "
    "over seeds; `Δ [lo, hi]`: the difference from `{baseline}` and its interval at the "
    "Bonferroni level, by the report's test (the trained model as the unit of noise), "
    f"{MARK} where it excludes 0; `vs ½`: the male-wins share minus ½, likewise. A method that "
    "ranks the neutral version first and then the male before the female looks fairer by "
    "NFaiRR while favouring men: the Findings' verdicts read both."
)


def interval_cell(diff: object, low: object, high: object, digits: int = 3) -> str:
    """``+0.120 [+0.050, +0.190]†`` († where the interval excludes 0); empty when missing."""
    if diff is None or low is None or high is None:
        return ""
    d, lo, hi = float(diff), float(low), float(high)  # type: ignore[arg-type]
    return f"{d:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]" + (
        MARK if lo > 0 or hi < 0 else "")  # fmt: skip


def direction_table(cmp: pl.DataFrame, skip: Sequence[str] = ()) -> str:
    """Signed gap, male-wins (also against ½) and neutral-first per method, each with its
    difference from the baseline."""
    rows = {(r["method"], r["metric"]): r for r in cmp.iter_rows(named=True)}
    keys = tuple(SIGN_TESTED)
    lines = [
        "| method | signed gap | Δ | male wins | vs ½ | Δ | neutral first | Δ |",
        "|---|" + "---:|" * 7,
    ]
    for m in dict.fromkeys(cmp["method"].to_list()):
        cells = []
        for k in keys:
            row = rows.get((m, k))
            cells.append(_abs_cell(row, 3) if row else "")
            got = row or {}
            if k == "gap-male-wins":
                cells.append(interval_cell(got.get("target_diff"), got.get("target_low"),
                                           got.get("target_high")))  # fmt: skip
            delta = "" if m in skip else interval_cell(got.get("diff"), got.get("ci_adj_low"),
                                                       got.get("ci_adj_high"))  # fmt: skip
            cells.append(delta)
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _legend(
    baseline: str,
    reference: Sequence[str],
    n: int,
    alpha: float,
    seeds: int,
    correction: str = "bonferroni",
) -> str:
    refs = ", ".join(f"`{r}`" for r in reference)
    ref = f" Rows {refs}: reference rows (first stage, untrained model), not compared."
    ref = ref if reference else ""
    spread = " A method with several seeds shows mean ± std over its seeds." if seeds > 1 else ""
    name = CORRECTION_NAMES.get(correction, correction)
    return (
        "Arrows: ↑ higher is better, ↓ lower is better, →0 closer to zero is fairer "
        f"(ARaB signed: positive = male-leaning; `-abs`: magnitude).{ref}{spread} "
        f"{MARK}: differs from `{baseline}` with p < {alpha:g}, {_test_name(seeds)}, "
        f"{name}-adjusted for {n} compared method(s). {MARK} means *different*, not "
        "*fairer*: it is shown on effectiveness and magnitude columns only (`-abs`, NFaiRR, "
        "LIWC, AWRF, gap-abs), not on the signed ARaB and gap columns, where a significant "
        "difference can be a sign flip; read their `-abs` columns. Change = 100 · (method − "
        "baseline) / |baseline|; [lo, hi] = interval of the mean paired difference "
        f"(method − baseline) from the same model, in % of |baseline|, at the {name} level "
        f"of {MARK} and the Findings ({n} comparisons), so it excludes 0 exactly where a "
        "difference is detected."
    )


def _test_name(seeds: int) -> str:
    if seeds > 1:
        return (f"two-sided test with the trained model (seed × fold, {seeds} seeds) as the "
                "unit of noise (crossed random effects for model and query; "
                "pipeline/model_test.py)")  # fmt: skip
    return "paired two-sided t-test over the queries evaluated for both"


FINDINGS_CUTOFF = 10
"""The cut-off of the ``@{k}`` measures that the Findings and the Controls table read."""


def placed(section: str, measures: Sequence[Measure] = MEASURES) -> list[Measure]:
    """The measures the metric records place in report ``section`` (``Measure.report``:
    ``findings``, ``controls``, ``judged``), by their position there (then registry order):
    a new metric record reaches those sections by declaring it, with no report edit."""
    at = [(dict(m.report)[section], i, m) for i, m in enumerate(measures)
          if section in dict(m.report)]  # fmt: skip
    return [m for _, _, m in sorted(at, key=lambda t: (t[0], t[1]))]


def reading(measure: Measure) -> str:
    """What a higher value of ``measure`` means in a Finding: ``effective`` (an
    effectiveness measure), ``fair`` (a fairness measure where higher is fairer) or
    ``unfair`` (lower is fairer)."""
    if not measure.fairness:
        return "effective"
    return "fair" if measure.direction == "↑" else "unfair"
