"""The rule a verdict follows (issue 40): one primary fairness metric, Holm across the
secondary ones, the F/M balance by equivalence, and the primary effect read on every scope.

- **Primary** (``report.primary``, default NFaiRR@10): *fairer* / *less fair* is decided by
  its Bonferroni-level interval alone (one test per method, so "fairer" has the report's
  family-wise error rate α over the compared methods). The other fairness magnitudes are
  **secondary**: Holm (1979) across them on their adjusted p (``p_adjusted``), a claim only
  where Holm rejects and the interval agrees; a secondary that worsens still vetoes a plain
  "fairer".
- **Balance** (``report.balance_margin`` δ, default 0.05 = 5 points of the male-wins share):
  *balanced (within ±5 points)* only where two one-sided tests (``pipeline.model_power``)
  establish both ``|share − ½| < δ`` and ``|change vs the baseline| < δ`` at the report's
  level; a shift whose estimate leaves the margin names its side ("male-leaning: +9.6
  points"); otherwise *balance not established* (the intervals are wider than the margin).
- **Scopes**: the primary effect is read on the judged scope and on the transfer collection,
  and said to *hold* (beyond noise, same side), *reverse* (estimate on the other side) or
  *vanish* (same side, not beyond noise), with that comparison's MDE beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import InputError
from pipeline.model_power import equivalence_interval

Row = Mapping[str, Any]
FAIRNESS = ("NFaiRR@10", "ARaB-tf-abs@10", "LIWC@10", "gap-abs")
SCOPES = (("judged", "the judged scope", "judged"), ("transfer", "GenderBias-QA", "transfer"))
"""(key, name in the text, name of its MDE): the scopes a main verdict is read on."""


@dataclass(frozen=True)
class VerdictRule:
    """``primary``: the fairness metric that decides "fairer"; ``margin``: the F/M balance
    margin in male-wins share (0.05 = 5 points); ``alpha``: the family-wise level."""

    primary: str = "NFaiRR@10"
    margin: float = 0.05
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if self.primary not in FAIRNESS:
            raise InputError(f"report.primary: expected one of {list(FAIRNESS)}, got "
                             f"{self.primary!r}")  # fmt: skip
        if not 0 < self.margin < 0.5:
            raise InputError(f"report.balance_margin: expected in (0, 0.5), got {self.margin}")

    @property
    def points(self) -> str:
        """``±5 points``."""
        return f"±{100 * self.margin:g} points"


def holm(p: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of ``p`` (nulls stay null and do not count)."""
    present = sorted((float(x), i) for i, x in enumerate(p) if x is not None)
    out: list[float | None] = [None] * len(p)
    running = 0.0
    for rank, (value, i) in enumerate(present):
        running = max(running, min(1.0, (len(present) - rank) * value))
        out[i] = running
    return out


@dataclass(frozen=True)
class Balance:
    """The F/M balance of a method: ``state`` ``balanced`` / ``leaning`` / ``not
    established``; ``words``: its part of the verdict; ``text``: its sentence."""

    state: str
    words: str
    text: str


KEYS = {
    "target": ("target_diff", "target_low", "target_high", "target_se", "target_df"),
    "change": ("diff", "ci_adj_low", "ci_adj_high", "se", "df"),
}


def _tost(row: Row, which: str) -> tuple[float, float] | None:
    """The TOST interval of the share against ½ (``target``) or of its change (``change``)."""
    est, lo, hi, se, df = (row.get(k) for k in KEYS[which])
    if est is None or lo is None or hi is None:
        return None
    return equivalence_interval(float(est), float(lo), float(hi), se, df)


def _inside(interval: tuple[float, float] | None, margin: float) -> bool:
    return interval is not None and -margin < interval[0] and interval[1] < margin


def _pair(x: tuple[float, float] | None) -> str:
    return "?" if x is None else f"[{x[0]:+.3f}, {x[1]:+.3f}]"


def balance(row: Row, base: Row | None, rule: VerdictRule, moved: int, lean: str | None) -> Balance:
    """The balance of one method's male-wins row (``moved``: ±1 where its change vs the
    baseline is beyond noise; ``lean``: its significant lean against ½, as worded)."""
    share, change = _tost(row, "target"), _tost(row, "change")
    shift = row.get("diff")
    versus = "" if base is None or base.get("mean") is None else \
        f" vs the baseline's {float(base['mean']):.0%}"  # fmt: skip
    head = f"male-wins share {float(row['mean']):.0%}{versus}"
    tost = f"equivalence intervals: share − ½ {_pair(share)}, change {_pair(change)}"
    side = "male" if (shift or 0.0) > 0 else "female"
    if shift is not None and (moved or abs(float(shift)) > rule.margin):
        word = f"more {side} wins" if moved else f"{side}-leaning"
        words = f"{word}: {100 * float(shift):+.1f} points"
        return Balance("leaning", words, f"{head}, {words}, beyond the {rule.points} margin "
                       f"({tost})")  # fmt: skip
    if lean:
        return Balance("leaning", lean, f"{head}, {lean} against ½ ({tost})")
    if _inside(share, rule.margin) and _inside(change, rule.margin):
        words = f"balanced (within {rule.points})"
        return Balance("balanced", words, f"{head}, {words}: both one-sided tests reject ({tost})")
    return Balance(
        "not established",
        "balance not established",
        f"{head}, balance not established: its {tost} reach beyond {rule.points}",
    )


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


def _pct(row: Row, key: str) -> str:
    base, value = row.get("baseline"), row.get(key)
    if value is None:
        return "?"
    if base:
        v = 100 * float(value) / abs(float(base))
        return f"{v:.0f}%" if abs(v) >= 10 else f"{v:.1f}%"
    return f"{float(value):.4f}"


def scope_reading(metric: str, good: int, main: int, row: Row | None, name: str, tag: str) -> str:
    """Whether the primary effect (``main``: +1 better, −1 worse, 0 none; ``good``: +1 where a
    higher value is fairer) holds, reverses or vanishes on a scope (its comparison ``row``)."""
    if row is None or row.get("diff") is None:
        return f"not evaluated on {name}"
    lo, hi = row.get("ci_adj_low"), row.get("ci_adj_high")
    side = good * (0 if lo is None or hi is None else 1 if lo > 0 else -1 if hi < 0 else 0)
    sign = good * (1 if float(row["diff"]) > 0 else -1 if float(row["diff"]) < 0 else 0)
    if main:
        word = "holds" if side == main else \
            "reverses" + (" beyond noise" if side == -main else "") if sign == -main else \
            "vanishes"  # fmt: skip
    else:
        word = {1: "fairer", -1: "less fair", 0: "no detectable difference"}[side]
    change = row.get("change_pct")
    moved = f"{float(change):+.1f}%" if change is not None else f"{float(row['diff']):+.4f}"
    mde = f"{tag} MDE {_pct(row, 'mde')}" if row.get("mde") is not None else \
        f"{tag}: {mde_text(row)}"  # fmt: skip
    return f"{word} on {name} ({metric} {moved}; {mde})"


Scopes = Mapping[str, Mapping[tuple[str, str], Row]]


def scope_rows(frames: Mapping[str, Any]) -> dict[str, dict[tuple[str, str], Row]]:
    """``scope → (method, metric) → row`` of the scopes' comparison tables present (polars
    frames; a null scope was not evaluated)."""
    return {k: {(r["method"], r["metric"]): r for r in f.iter_rows(named=True)}
            for k, f in frames.items() if f is not None}  # fmt: skip


def scope_text(
    method: str, rule: VerdictRule, good: int, main: int,
    scopes: Scopes,
) -> str:  # fmt: skip
    """The primary effect of ``method`` on every scope present, ``; ``-joined."""
    return "; ".join(
        scope_reading(rule.primary, good, main, scopes[key].get((method, rule.primary)), name, tag)
        for key, name, tag in SCOPES if key in scopes)  # fmt: skip
