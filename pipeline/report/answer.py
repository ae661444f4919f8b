"""What the default found, first: one paragraph and one table at the top of summary.md
(and of the README, `pipeline.report.readme`), generated from the same verdicts, scope
readings and frontier placements as the sections below it (issue 41: the answer was buried
under 400 lines of tables and no sentence said what the default found).

The paragraph counts the methods by their verdict on the primary metric (`report.primary`,
one test per method at the family-wise level), names those that moved with their interval,
says whether any changed MRR, reads the moved ones' direction (the F/M balance) and their
effect on the judged scope and the held-out collection, and places the trained methods
against the inference-time frontier with the positive control's result. The table has one
row per trained method: the change of MRR and of the primary with their family-wise
intervals, the verdict, the two scope readings and the place against the frontier.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

import polars as pl

from pipeline.report.claims import Claim, Verdict, verdicts
from pipeline.report.frontier import curve, detected_doses, frontier_series, placement, point
from pipeline.report.verdict_rule import SCOPES, VerdictRule, scope_reading

TITLE = "What the default found"
PLACES = (("on the re-ranking frontier", "on"), ("above the frontier", "above"),
          ("below the frontier", "below"), ("no fairness gain", "no gain"),
          ("fairer than the frontier", "beyond"))  # fmt: skip
"""The start of a `frontier.placement` text → its one-word place."""


def _claim(v: Verdict, metric: str) -> Claim | None:
    return next((c for c in v.claims if c.metric == metric), None)


def _interval(c: Claim | None) -> str:
    if c is None or c.low is None or c.high is None:
        return "–"
    return f"{c.diff:+.4f} [{c.low:+.4f}, {c.high:+.4f}]"


def _side(c: Claim | None) -> int:
    return {"better": 1, "worse": -1}.get(c.verdict if c else "none", 0)


def scope_word(v: Verdict, rule: VerdictRule, good: int, key: str,
               scopes: Mapping[str, Mapping[tuple[str, str], Any]]) -> str:  # fmt: skip
    """``holds`` / ``reverses`` / ``vanishes`` (a moved primary) or the scope's own reading
    (``fairer``, ``less fair``, ``no detectable difference``) of ``v`` on scope ``key``."""
    name, tag = next((n, t) for k, n, t in SCOPES if k == key)
    rows = scopes.get(key)
    if rows is None:
        return "–"
    text = scope_reading(rule.primary, good, _side(_claim(v, rule.primary)),
                         rows.get((v.method, rule.primary)), name, tag)  # fmt: skip
    word = text.split(f" on {name}")[0]
    return {"no detectable difference": "none", "not evaluated": "–"}.get(word, word)


def places(cmp: pl.DataFrame, post_cmp: pl.DataFrame | None,
           post: Mapping[str, Mapping[str, Any]], k: int) -> dict[str, str]:  # fmt: skip
    """Each trained method's place against the frontier (the first series of ≥ 3 entries)."""
    frontier = frontier_series(post)
    if post_cmp is None or frontier is None:
        return {}
    fair, mrr = f"NFaiRR@{k}", f"MRR@{k}"
    points = curve(post_cmp, frontier, post, fair, mrr)
    base = str(post[frontier[0]].get("base"))
    out = {}
    for m in cmp["method"].unique(maintain_order=True).to_list():
        if (p := point(cmp, m, fair, mrr)) is not None:
            text = placement(p, points, base)
            out[m] = next((w for start, w in PLACES if text.startswith(start)), text)
    return out


def positive_control(post_cmp: pl.DataFrame | None, post: Mapping[str, Mapping[str, Any]],
                     k: int) -> str:  # fmt: skip
    """The positive control in a clause: the smallest λ of the frontier detected."""
    frontier = frontier_series(post)
    if post_cmp is None or frontier is None:
        return ""
    fair = f"NFaiRR@{k}"
    hits = detected_doses(post_cmp, frontier, fair)
    base = post[frontier[0]].get("base")
    if not hits:
        return (f"The positive control (re-ranking `{base}`'s own scores by neutrality) was "
                "**not detected**: the design cannot show an effect of that size. ")  # fmt: skip
    n, r = hits[0]
    return (f"The positive control — re-ranking `{base}`'s own scores by neutrality, no "
            f"training — is **detected** from λ = {post[n].get('lambda')} on ({fair} "
            f"{r['diff']:+.4f}, MDE {r['mde']:.4f}), so the design can say yes. ")  # fmt: skip


def _names(vs: Sequence[Verdict], metric: str) -> str:
    return "; ".join(f"`{v.method}` {_interval(_claim(v, metric))}" for v in vs)


def paragraph(vs: Sequence[Verdict], rule: VerdictRule, mrr: str, baseline: str,
              setting: str, alpha: float, scopes: Mapping[str, Any], where: Mapping[str, str],
              control: str) -> str:  # fmt: skip
    """The answer in one paragraph (module docstring)."""
    p = rule.primary
    up = [v for v in vs if _side(_claim(v, p)) > 0]
    down = [v for v in vs if _side(_claim(v, p)) < 0]
    quiet = [v for v in vs if _side(_claim(v, p)) == 0]
    mdes = [c.mde for v in quiet if (c := _claim(v, p)) is not None and c.mde is not None]
    text = (f"{setting}: {len(vs)} trained methods, each compared with `{baseline}` on {p} "
            f"(one test per method at α = {alpha:g}/{len(vs)}). ")  # fmt: skip
    text += f"**{len(up)} made the ranking fairer** ({_names(up, p)}), " if up else \
        "**None made the ranking detectably fairer**, "  # fmt: skip
    text += f"**{len(down)} less fair** ({_names(down, p)}), " if down else ""
    text += f"and **{len(quiet)} showed no detectable difference**"
    text += (f" (MDE {min(mdes):.4f}–{max(mdes):.4f}, median {median(mdes):.4f})."
             if mdes else ".")  # fmt: skip
    moved_mrr = [v for v in vs if _claim(v, mrr) is not None and _claim(v, mrr).verdict != "none"]  # type: ignore[union-attr]
    text += (f" {len(moved_mrr)} changed {mrr} detectably ({_names(moved_mrr, mrr)})."
             if moved_mrr else f" No method changed {mrr} detectably.")  # fmt: skip
    moved = up + down
    if moved:
        text += " Direction: " + "; ".join(
            f"`{v.method}` {v.balance.words if v.balance else 'F/M balance not measured'}"
            for v in moved) + "."  # fmt: skip
        good = -1 if p.startswith(("ARaB", "LIWC", "gap")) else 1
        for key, name, _ in SCOPES:
            if key in scopes:
                words = [f"`{v.method}` {scope_word(v, rule, good, key, scopes)}" for v in moved]
                text += f" On {name}: {', '.join(words)}."
    text += " " + control if control else ""
    gains = [m for m, w in where.items() if w not in ("no gain",)]
    if where:
        counts = {w: sum(1 for m in gains if where[m] == w) for w in ("above", "on", "below")}
        text += (f"Against that re-ranking frontier, of the {len(gains)} trained methods whose "
                 f"{p} lies above `{baseline}`'s (detected or not), {counts['above']} lie "
                 f"above it, {counts['on']} on it and {counts['below']} below it (MRR within "
                 "noise of the frontier's at the same fairness): re-ranking "
                 f"`{baseline}`'s scores reaches what they reach without training.")  # fmt: skip
    return text.strip()


def answer_markdown(
    cmp: pl.DataFrame, baseline: str, *, skip: Sequence[str], rule: VerdictRule, k: int,
    alpha: float, setting: str, scopes: Mapping[str, Any], post_cmp: pl.DataFrame | None,
    post: Mapping[str, Mapping[str, Any]],
) -> str:  # fmt: skip
    """The ``## What the default found`` section: the paragraph and the table."""
    vs = verdicts(cmp, baseline, skip, rule)
    mrr = f"MRR@{k}"
    where = places(cmp.filter(~pl.col("method").is_in([baseline, *skip])), post_cmp, post, k)
    good = -1 if rule.primary.startswith(("ARaB", "LIWC", "gap")) else 1
    lines = [f"## {TITLE}", "",
             paragraph(vs, rule, mrr, baseline, setting, alpha, scopes, where,
                       positive_control(post_cmp, post, k)), "",
             f"| method | {mrr} change [family-wise CI] | {rule.primary} change [family-wise CI] "
             "| verdict | judged scope | GenderBias-QA | vs the re-ranking frontier |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for v in vs:
        cells = [_interval(_claim(v, mrr)), _interval(_claim(v, rule.primary)), v.label,
                 *(scope_word(v, rule, good, key, scopes) for key, _, _ in SCOPES),
                 where.get(v.method, "–")]  # fmt: skip
        lines.append(f"| {v.method} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
