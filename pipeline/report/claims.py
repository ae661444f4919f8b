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
- per method (:class:`Verdict`), **magnitude and direction together**, by the rule of
  ``pipeline.report.verdict_rule`` (issue 40): *fairer* / *less fair* is decided by the
  **primary** fairness metric (``report.primary``, NFaiRR@10) at the Bonferroni level; the
  other fairness magnitudes are secondary, Holm across them (one that worsens still vetoes
  "fairer"). The balance between the female and male versions is the male-wins share (F/M
  ties count ½): **balanced (within ±5 points)** only where two one-sided tests establish
  both the share against ½ and its change vs the baseline inside ``report.balance_margin``;
  a shift whose estimate leaves the margin is named with its side ("male-leaning: +9.6
  points"; "more male wins: …" where it is also beyond noise); a significant lean against ½
  is named as before ("male-leaning as the baseline" where the baseline leans the same way);
  otherwise **balance not established**. The verdict is plain **fairer** only where the
  primary improves, nothing worsens and the balance is established; otherwise it names what
  moved ("fairer by NFaiRR@10, balance not established"); where nothing moved, "no
  detectable difference in fairness or direction". A line given the judged scope's and the
  transfer collection's comparisons says whether the primary effect holds, reverses or
  vanishes there, with that comparison's MDE.

:func:`verdicts` returns them as data (the tests compare every one with its intervals);
:func:`findings_markdown` renders the main collection's, :func:`findings_lines` any table's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from pipeline.report.tables import FINDINGS_CUTOFF, placed, reading
from pipeline.report.verdict_rule import (
    Balance,
    Scopes,
    VerdictRule,
    balance,
    holm,
    mde_text,
    scope_text,
)

# (metric, what a higher value means): "fair"/"unfair"/"effective"; the order of the text.
# From the metric records (`Measure.report`, section "findings"): MRR@10, nDCG@10, NFaiRR@10,
# ARaB-tf-abs@10, LIWC@10, gap-abs.
HEADLINE = tuple((m.key.format(k=FINDINGS_CUTOFF), reading(m)) for m in placed("findings"))
MALE_WINS = "gap-male-wins"
NEUTRAL_FIRST = "gap-neutral-first"
DIRECTION = (MALE_WINS, NEUTRAL_FIRST)
SEED_SPREAD = "ARaB-tf-abs@10"
DEFAULT_RULE = VerdictRule()
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
    wins``/``more female wins``), the neutral-first share against the baseline, and
    ``balance``: the F/M balance by equivalence (``verdict_rule.balance``; null: not
    measured)."""

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
    balance: Balance | None = None


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


def secondary_claims(method: str, rows: Mapping[tuple[str, str], Row], rule: VerdictRule
                     ) -> list[Claim]:  # fmt: skip
    """The secondary fairness metrics of ``method``: Holm across them on their adjusted p; a
    claim only where Holm rejects at ``rule.alpha`` and the interval agrees."""
    keys = [(m, k) for m, k in HEADLINE if k != "effective" and m != rule.primary
            and (method, m) in rows and rows[(method, m)].get("diff") is not None]  # fmt: skip
    adjusted = holm([rows[(method, m)].get("p_adjusted") for m, _ in keys])
    out = []
    for (metric, kind), p in zip(keys, adjusted, strict=True):
        c = metric_claim(method, metric, kind, rows[(method, metric)])
        if c.verdict != "none" and (p is None or p >= rule.alpha):
            c = replace(c, verdict="none", text=f"no detectable difference in {metric} "
                        f"(secondary, Holm p {p if p is None else f'{p:.2g}'}; "
                        f"{mde_text(rows[(method, metric)])})")  # fmt: skip
        elif c.verdict != "none":
            c = replace(c, text=f"{c.text[:-1]}; secondary, Holm p {p:.2g})")
        out.append(c)
    return out


def verdict(
    method: str,
    rows: Mapping[tuple[str, str], Row],
    baseline: str,
    versus: str = "the baseline",
    rule: VerdictRule = DEFAULT_RULE,
) -> Verdict | None:
    """The verdict of ``method`` from its rows of a comparison table (null: nothing tested);
    ``versus`` names the baseline in the label ("male-leaning as the baseline")."""
    kinds = dict(HEADLINE)
    tested = [m for m, _ in HEADLINE
              if (method, m) in rows and rows[(method, m)].get("diff") is not None]  # fmt: skip
    claims = [metric_claim(method, m, kinds[m], rows[(method, m)]) for m in tested
              if kinds[m] == "effective" or m == rule.primary]  # fmt: skip
    claims += secondary_claims(method, rows, rule)
    claims += [
        direction_claim(method, metric, rows[(method, metric)], rows.get((baseline, metric)))
        for metric in DIRECTION
        if (method, metric) in rows and rows[(method, metric)].get("diff") is not None
    ]
    if not claims:
        return None
    order = {m: i for i, (m, _) in enumerate(HEADLINE)}
    claims.sort(key=lambda c: order.get(c.metric, len(order)))
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
    bal = (
        balance(
            male,
            base_male or None,
            rule,
            moved_side,
            lean and (f"{lean} as {versus}" if shared else lean),
        )
        if measured
        else None
    )
    label = _label(fairer, less, rule.primary, neutral, bal)
    return Verdict(method, label, fairer, less, lean, moved, neutral, measured, tuple(claims),
                   shared, bal)  # fmt: skip


def _label(
    fairer: Sequence[str], less: Sequence[str], primary: str, neutral: str | None,
    bal: Balance | None,
) -> str:  # fmt: skip
    """ "fairer" alone only where the primary metric improves, nothing worsens and the balance
    is established; otherwise what moved, the balance last."""
    if primary in fairer and not less and (bal is None or bal.state == "balanced"):
        return "fairer" if bal is not None else "fairer (F/M balance not measured)"
    parts = []
    if fairer:
        parts.append(f"fairer by {', '.join(fairer)}" if primary in fairer
                     else f"fairer by secondary {', '.join(fairer)} only")  # fmt: skip
    parts += [f"less fair by {', '.join(less)}"] if less else []
    parts += [neutral] if neutral else []
    if bal is not None and (parts or bal.state != "not established"):
        parts.append(bal.words)
    if not parts:
        return "no detectable difference in fairness or direction"
    if not (fairer or less or neutral):
        parts.insert(0, "no detectable difference in fairness")
    return ", ".join(parts)


def verdicts(
    cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = (), rule: VerdictRule = DEFAULT_RULE
) -> list[Verdict]:
    """The verdict of every compared method (the table's order)."""
    rows = {(r["method"], r["metric"]): r for r in cmp.iter_rows(named=True)}
    methods = [m for m in dict.fromkeys(cmp["method"].to_list()) if m not in {baseline, *skip}]
    return [v for m in methods if (v := verdict(m, rows, baseline, rule=rule)) is not None]


def claims(
    cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = (), rule: VerdictRule = DEFAULT_RULE
) -> list[Claim]:
    """Every metric reading of every compared method."""
    return [c for v in verdicts(cmp, baseline, skip, rule) for c in v.claims]


def finding_line(
    v: Verdict, rows: Mapping[tuple[str, str], Row], name: str | None = None,
    scopes: Scopes | None = None, rule: VerdictRule = DEFAULT_RULE,
) -> str:  # fmt: skip
    """``- **method**: **verdict**. primary on the scopes; what moved; the balance; what did
    not (MDEs).``"""
    moved = [c.text for c in v.claims if c.verdict != "none"]
    quiet = [c for c in v.claims if c.verdict == "none"]
    parts = moved + ([v.balance.text] if v.balance is not None else [])
    if quiet:
        parts.append("no detectable difference in " + ", ".join(
            f"{c.metric} ({mde_text(rows[(v.method, c.metric)])})" for c in quiet))  # fmt: skip
    head = f"- **{name or v.method}**: **{v.label}**. "
    if scopes:
        main = next((c for c in v.claims if c.metric == rule.primary), None)
        side = {"better": 1, "worse": -1}.get(main.verdict if main else "none", 0)
        good = -1 if dict(HEADLINE)[rule.primary] == "unfair" else 1
        head += f"{rule.primary}: {scope_text(v.method, rule, good, side, scopes)}. "
    return head + "; ".join(parts) + "."


def findings_lines(
    cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = (), rule: VerdictRule = DEFAULT_RULE,
    scopes: Scopes | None = None,
) -> list[str]:  # fmt: skip
    """One Findings line per compared method of ``cmp`` (``scopes``: the same comparison on the
    judged scope / transfer collection, whose primary effect each line reads)."""
    rows = {(r["method"], r["metric"]): r for r in cmp.iter_rows(named=True)}
    return [finding_line(v, rows, scopes=scopes, rule=rule)
            for v in verdicts(cmp, baseline, skip, rule)]  # fmt: skip
