"""What the results allow a researcher to say (SPEC §4.9 "Wording", "Verdict"; issues 21, 29).

Every sentence of the report's *Findings* (main and transfer collection, controls; and of the
README's discussion, copied from it by ``pipeline.report.readme``) is generated here from a
comparison table (``pipeline.report.significance.compare``), so no claim can outrun its
interval:

- per metric (:class:`Claim`): **fairer / less fair / more / less effective** only where the
  interval of the difference at the family-wise level (``ci_adj_low``, ``ci_adj_high``:
  ``1 − α/m``, Bonferroni over the m compared methods; the test whose unit is the trained
  model) excludes zero in that direction; otherwise **no detectable difference (MDE x)**,
  x the minimal detectable effect of the design that was run (80% power at α/m), or "no
  change the metric can take is detectable" where that MDE exceeds the metric's range;
- per method (:class:`Verdict`), **magnitude and direction together**: the balance between
  the female and male versions is the male-wins share (F/M ties count ½), tested against
  ½ (``target_low``/``target_high``: *male-leaning* / *female-leaning*) and against the
  baseline (*more male wins* / *more female wins*); the neutral-first share against the
  baseline. The verdict is **fairer** only where a fairness magnitude improves beyond noise,
  none worsens, and the balance moves beyond noise in neither test; otherwise it names what
  moved ("fairer by NFaiRR@10, male-leaning"; "neutral first more often, more male wins";
  "male-leaning as the baseline" where the baseline leans the same way beyond noise);
  where nothing moved, "no detectable difference in fairness or direction".

:func:`verdicts` returns them as data (the tests compare every one with its intervals);
:func:`findings_markdown` renders the main collection's, :func:`findings_lines` any table's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

# (metric, what a higher value means): "fair"/"unfair"/"effective"; the order of the text
HEADLINE = (
    ("MRR@10", "effective"),
    ("nDCG@10", "effective"),
    ("NFaiRR@10", "fair"),
    ("ARaB-tf-abs@10", "unfair"),
    ("LIWC@10", "unfair"),
    ("gap-abs", "unfair"),
)
MALE_WINS = "gap-male-wins"
NEUTRAL_FIRST = "gap-neutral-first"
DIRECTION = (MALE_WINS, NEUTRAL_FIRST)
SEED_SPREAD = "ARaB-tf-abs@10"
Row = Mapping[str, Any]


@dataclass(frozen=True)
class Claim:
    """One metric's reading: ``verdict`` is ``better``/``worse`` (in the metric's good
    direction; for a direction metric, ``more``/``less`` often than the baseline) or
    ``none`` (the interval contains zero)."""

    method: str
    metric: str
    verdict: str
    diff: float
    low: float | None
    high: float | None
    mde: float | None
    text: str


@dataclass(frozen=True)
class Verdict:
    """One method's verdict: ``label`` from the fairness magnitudes that improved
    (``fairer``) or worsened (``less_fair``), the male-wins share against ½ (``lean``:
    ``male-leaning``/``female-leaning``) and against the baseline (``moved``: ``more male
    wins``/``more female wins``), and the neutral-first share against the baseline."""

    method: str
    label: str
    fairer: tuple[str, ...]
    less_fair: tuple[str, ...]
    lean: str | None
    moved: str | None
    neutral: str | None
    balance_measured: bool
    claims: tuple[Claim, ...]
    lean_as_baseline: bool = False


def excludes_zero(low: object, high: object) -> int:
    """+1 / −1 where the interval ``[low, high]`` lies above / below zero, else 0."""
    if low is None or high is None:
        return 0
    return 1 if float(low) > 0 else -1 if float(high) < 0 else 0  # type: ignore[arg-type]


WORDS = {
    ("fair", "better"): "fairer", ("fair", "worse"): "less fair",
    ("unfair", "better"): "fairer", ("unfair", "worse"): "less fair",
    ("effective", "better"): "more effective", ("effective", "worse"): "less effective",
}  # fmt: skip


def _num(x: object) -> str:
    """``+0.0123``; a non-zero value that would print as ±0.0000 keeps two digits."""
    if x is None:
        return "?"
    v = float(x)  # type: ignore[arg-type]
    return f"{v:+.1e}" if 0 < abs(v) < 5e-5 else f"{v:+.4f}"


def mde_text(row: Row) -> str:
    """``MDE 0.0123``; where no change the metric can take is detectable, says so."""
    gap, limit = row.get("mde"), row.get("mde_limit")
    if gap is not None:
        return f"MDE {float(gap):.2g}" if float(gap) < 0.001 else f"MDE {float(gap):.4f}"
    if row.get("se") == 0:
        return "identical on every query and seed"
    if limit is not None:
        return f"MDE beyond the metric's range: no change up to {float(limit):.3f} is detectable"
    return "MDE unknown"


def metric_claim(method: str, metric: str, kind: str, row: Row) -> Claim:
    """The reading of one headline metric of ``method`` (see the module docstring)."""
    side = excludes_zero(row.get("ci_adj_low"), row.get("ci_adj_high"))
    verdict = "none" if side == 0 else ("better" if (side > 0) != (kind == "unfair") else "worse")
    if verdict == "none":
        text = f"no detectable difference in {metric} ({mde_text(row)})"
    else:
        text = (f"{WORDS[(kind, verdict)]} by {metric} ({_num(row['diff'])} "
                f"[{_num(row['ci_adj_low'])}, {_num(row['ci_adj_high'])}])")  # fmt: skip
    return Claim(method, metric, verdict, float(row["diff"]), row.get("ci_adj_low"),
                 row.get("ci_adj_high"), row.get("mde"), text)  # fmt: skip


def direction_claim(method: str, metric: str, row: Row, base: Row | None) -> Claim:
    """The male-wins or neutral-first share against the baseline's."""
    side = excludes_zero(row.get("ci_adj_low"), row.get("ci_adj_high"))
    what = "male version above the female one" if metric == MALE_WINS else \
        "neutral version above both gendered ones"  # fmt: skip
    versus = "" if base is None or base.get("mean") is None else f" vs {float(base['mean']):.0%}"
    interval = f"{_num(row['diff'])} [{_num(row['ci_adj_low'])}, {_num(row['ci_adj_high'])}]"
    if side == 0:
        text = (f"no detectable difference in {metric} ({float(row['mean']):.0%}{versus}; "
                f"{interval}, {mde_text(row)})")  # fmt: skip
    else:
        text = (f"{what} {'more' if side > 0 else 'less'} often ({float(row['mean']):.0%} of "
                f"queries{versus}; {interval})")  # fmt: skip
    return Claim(method, metric, "none" if side == 0 else "more" if side > 0 else "less",
                 float(row["diff"]), row.get("ci_adj_low"), row.get("ci_adj_high"),
                 row.get("mde"), text)  # fmt: skip


def verdict(
    method: str, rows: Mapping[tuple[str, str], Row], baseline: str, versus: str = "the baseline"
) -> Verdict | None:
    """The verdict of ``method`` from its rows of a comparison table (null: nothing tested);
    ``versus`` names the baseline in the label ("male-leaning as the baseline")."""
    claims = [metric_claim(method, metric, kind, rows[(method, metric)])
              for metric, kind in HEADLINE
              if (method, metric) in rows and rows[(method, metric)].get("diff") is not None]
    claims += [direction_claim(method, metric, rows[(method, metric)], rows.get((baseline, metric)))
               for metric in DIRECTION
               if (method, metric) in rows and rows[(method, metric)].get("diff") is not None]
    if not claims:
        return None
    kinds = dict(HEADLINE)
    fairer = tuple(c.metric for c in claims if kinds.get(c.metric, "effective") != "effective"
                   and c.verdict == "better")  # fmt: skip
    less = tuple(c.metric for c in claims if kinds.get(c.metric, "effective") != "effective"
                 and c.verdict == "worse")  # fmt: skip
    male, base_male = rows.get((method, MALE_WINS), {}), rows.get((baseline, MALE_WINS), {})
    lean_side = excludes_zero(male.get("target_low"), male.get("target_high"))
    lean = None if lean_side == 0 else "male-leaning" if lean_side > 0 else "female-leaning"
    base_side = excludes_zero(base_male.get("target_low"), base_male.get("target_high"))
    shared = lean_side != 0 and lean_side == base_side
    moved_side = next((1 if c.verdict == "more" else -1 for c in claims
                       if c.metric == MALE_WINS and c.verdict != "none"), 0)  # fmt: skip
    moved = None if moved_side == 0 else "more male wins" if moved_side > 0 else \
        "more female wins"  # fmt: skip
    neutral = next((f"neutral first {c.verdict} often" for c in claims
                    if c.metric == NEUTRAL_FIRST and c.verdict != "none"), None)  # fmt: skip
    measured = any(c.metric == MALE_WINS for c in claims)
    label = _label(fairer, less, lean and (f"{lean} as {versus}" if shared else lean), moved,
                   neutral, measured)  # fmt: skip
    return Verdict(method, label, fairer, less, lean, moved, neutral, measured, tuple(claims),
                   shared)  # fmt: skip


def _label(
    fairer: Sequence[str], less: Sequence[str], lean: str | None, moved: str | None,
    neutral: str | None, measured: bool,
) -> str:  # fmt: skip
    balance = [x for x in (lean, moved) if x]
    if fairer and not less and not balance:
        return "fairer" if measured else "fairer (F/M balance not measured)"
    parts = [f"fairer by {', '.join(fairer)}"] if fairer else []
    parts += [f"less fair by {', '.join(less)}"] if less else []
    parts += [x for x in (neutral, *balance) if x]
    return ", ".join(parts) if parts else "no detectable difference in fairness or direction"


def verdicts(cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = ()) -> list[Verdict]:
    """The verdict of every compared method (the table's order)."""
    rows = {(r["method"], r["metric"]): r for r in cmp.iter_rows(named=True)}
    methods = [m for m in dict.fromkeys(cmp["method"].to_list()) if m not in {baseline, *skip}]
    return [v for m in methods if (v := verdict(m, rows, baseline)) is not None]


def claims(cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = ()) -> list[Claim]:
    """Every metric reading of every compared method."""
    return [c for v in verdicts(cmp, baseline, skip) for c in v.claims]


def balance_text(rows: Mapping[tuple[str, str], Row], method: str) -> str:
    """The male-wins share of ``method`` against ½, for the text."""
    row = rows.get((method, MALE_WINS))
    if row is None or row.get("target_diff") is None:
        return ""
    side = excludes_zero(row.get("target_low"), row.get("target_high"))
    word = {1: "male-leaning", -1: "female-leaning", 0: "balanced within noise"}[side]
    return (f"male-wins share {float(row['mean']):.0%}, {word} ("
            f"{_num(row['target_diff'])} [{_num(row['target_low'])}, {_num(row['target_high'])}] "
            "against ½)")  # fmt: skip


def finding_line(v: Verdict, rows: Mapping[tuple[str, str], Row], name: str | None = None) -> str:
    """``- **method**: **verdict**. what moved; male-wins vs ½; what did not (MDEs).``"""
    moved = [c.text for c in v.claims if c.verdict != "none"]
    quiet = [c for c in v.claims if c.verdict == "none"]
    parts = moved + [x for x in [balance_text(rows, v.method)] if x]
    if quiet:
        parts.append("no detectable difference in " + ", ".join(
            f"{c.metric} ({mde_text(rows[(v.method, c.metric)])})" for c in quiet))  # fmt: skip
    return f"- **{name or v.method}**: **{v.label}**. " + "; ".join(parts) + "."


def findings_lines(cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = ()) -> list[str]:
    """One Findings line per compared method of ``cmp``."""
    rows = {(r["method"], r["metric"]): r for r in cmp.iter_rows(named=True)}
    return [finding_line(v, rows) for v in verdicts(cmp, baseline, skip)]


def design_rows(cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = ()) -> pl.DataFrame:
    """Per headline metric: the baseline's value and seed spread, the pooled sd of the
    per-query differences and the MDE of the design (queries, models, m compared): the root
    mean square of the compared methods' MDEs (each from its test's standard error)."""
    compared = cmp.filter(~pl.col("method").is_in([baseline, *skip]))
    rows = []
    for metric in [*(m for m, _ in HEADLINE), *DIRECTION]:
        part = compared.filter(pl.col("metric") == metric)
        base = cmp.filter((pl.col("method") == baseline) & (pl.col("metric") == metric))
        sds = [s for s in part["sd_diff"].to_list() if s is not None]
        gaps = [g for g in part["mde"].to_list() if g is not None]
        if not sds or not gaps or base.height == 0:
            continue
        value = base["mean"][0]
        gap = math.sqrt(sum(g * g for g in gaps) / len(gaps))
        rows.append({
            "metric": metric, "baseline": value, "seed_std": base["std"][0],
            "pooled_sd": math.sqrt(sum(s * s for s in sds) / len(sds)),
            "n": int(part["n_pairs"].max()), "models": int(part["n_models"].max() or 0),  # type: ignore[arg-type]
            "mde": gap, "mde_pct": 100 * gap / abs(value) if value else None,
        })  # fmt: skip
    return pl.DataFrame(rows)
