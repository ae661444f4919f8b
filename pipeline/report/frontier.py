"""The report's inference-time section (SPEC §6.8): the post-processors' dose-response (the
positive control) and the re-ranking frontier every trained method is placed against.

Inputs are comparison frames (`pipeline.report.significance.compare`, one row per (method,
metric)): the trained methods' (``cmp``) and the ``post:`` entries' (``post_cmp``, their own
family of comparisons with the baseline, so adding an entry leaves the trained methods'
levels as they were). A *series* is the entries that share their processor, base and every
setting but ``lambda``; sorted by λ it is a dose-response, and the first series of at least
three points on a trained base is *the frontier*: re-ranking the base's own scores traces
(MRR, fairness) points without training. A trained method at fairness f is placed against
the frontier's effectiveness at f (linear between the bracketing λ points): *above* or
*below* when the gap exceeds the noise of both (the root sum of squares of the half-widths
of the method's own adjusted MRR interval and of the frontier's at f, linear between its
points), *on the frontier* otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import polars as pl

LAMBDA = "lambda"


@dataclass(frozen=True)
class Point:
    """One entry's (or method's) means and its comparison with the baseline."""

    name: str
    lam: float | None
    effect: float  # fairness mean
    effect_diff: float | None
    effect_low: float | None
    effect_high: float | None
    mrr: float
    mrr_low: float | None
    mrr_high: float | None
    detected: bool
    mde: float | None


def series(post: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """The ``post:`` entries grouped by everything but ``lambda`` (params order), each
    group sorted by λ; entries without a λ are series of one."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for name, settings in post.items():
        key = tuple(sorted((k, str(v)) for k, v in settings.items() if k != LAMBDA))
        groups.setdefault(key if LAMBDA in settings else (name,), []).append(name)
    return [sorted(g, key=lambda n: float(post[n].get(LAMBDA, 0.0))) for g in groups.values()]


def frontier_series(post: Mapping[str, Mapping[str, Any]]) -> list[str] | None:
    """The frontier: the first `series` of at least three entries (None without one)."""
    return next((g for g in series(post) if len(g) >= 3), None)


def detected_doses(
    cmp: pl.DataFrame, names: Sequence[str], metric: str
) -> list[tuple[str, dict[str, Any]]]:
    """``(entry, its row)`` of the entries ``names`` whose ``metric`` differs from the base
    beyond noise, in their order (the positive control's doses that were detected)."""
    return [(n, r) for n in names if (r := row(cmp, n, metric)) and r.get("significant")]


def row(cmp: pl.DataFrame, name: str, metric: str) -> dict[str, Any] | None:
    """The comparison row of ``name`` and ``metric`` (None when absent)."""
    rows = cmp.filter((pl.col("method") == name) & (pl.col("metric") == metric))
    return rows.row(0, named=True) if rows.height else None


def point(
    cmp: pl.DataFrame, name: str, metric: str, mrr: str, lam: float | None = None
) -> Point | None:
    """``name``'s fairness ``metric`` and ``mrr`` from ``cmp`` (None when either is absent)."""
    f, e = row(cmp, name, metric), row(cmp, name, mrr)
    if f is None or e is None or f["mean"] is None or e["mean"] is None:
        return None
    return Point(name, lam, float(f["mean"]), f.get("diff"), f.get("ci_adj_low"),
                 f.get("ci_adj_high"), float(e["mean"]), e.get("ci_adj_low"),
                 e.get("ci_adj_high"), bool(f.get("significant")), f.get("mde"))  # fmt: skip


def curve(
    cmp: pl.DataFrame, names: Sequence[str], post: Mapping[str, Mapping[str, Any]],
    metric: str, mrr: str,
) -> list[Point]:  # fmt: skip
    """The points of one series, in λ order."""
    pts = [point(cmp, n, metric, mrr, float(post[n].get(LAMBDA, 0.0))) for n in names]
    return [p for p in pts if p is not None]


def _bracket(points: Sequence[Point], f: float) -> tuple[Point, Point, float] | None:
    """The first pair of consecutive points whose fairness brackets ``f`` and the share
    ``t`` of the way from the first to the second; None outside the curve's range."""
    for a, b in pairwise(points):
        lo, hi = sorted((a.effect, b.effect))
        if lo <= f <= hi:
            return a, b, 0.0 if b.effect == a.effect else (f - a.effect) / (b.effect - a.effect)
    return None


def frontier_at(points: Sequence[Point], f: float) -> tuple[float, float] | None:
    """``(effectiveness, λ)`` of the curve at fairness ``f``: linear between the first pair
    of consecutive points whose fairness brackets ``f``; None outside the curve's range."""
    if (found := _bracket(points, f)) is None:
        return None
    a, b, t = found
    la, lb = a.lam or 0.0, b.lam or 0.0
    return a.mrr + t * (b.mrr - a.mrr), la + t * (lb - la)


def placement(method: Point, points: Sequence[Point], base: str) -> str:
    """Where ``method`` lies against the frontier ``points``, in words (module docstring)."""
    if len(points) < 2:
        return "no frontier (fewer than two points)"
    start, end = points[0], max(points, key=lambda p: p.effect)
    noise = _half_width(method)
    f = f"{method.effect:.4f}"
    if method.effect < start.effect:
        gap = method.mrr - start.mrr
        return (
            f"no fairness gain over `{base}` to place ({f} below its {start.effect:.4f}, "
            f"where the frontier starts: re-ranking only raises fairness); MRR "
            f"{method.mrr:.4f} vs {start.mrr:.4f} ({gap:+.4f}, noise ±{noise:.4f})"
        )
    at = frontier_at(points, method.effect)
    if at is None:
        gap = method.mrr - end.mrr
        where = _side(gap, noise)
        return (f"fairer than the frontier's last point (λ {end.lam:g}, {end.effect:.4f}); "
                f"{where} it in MRR ({method.mrr:.4f} vs {end.mrr:.4f}, {gap:+.4f}, noise "
                f"±{noise:.4f})")  # fmt: skip
    mrr, lam = at
    gap = method.mrr - mrr
    noise = math.hypot(noise, _curve_half_width(points, method.effect))
    side = _side(gap, noise)
    verdict = "on the re-ranking frontier" if side == "level with" else f"{side} the frontier"
    return (f"{verdict}: re-ranking `{base}` reaches the same fairness ({f}) without training "
            f"at λ ≈ {lam:.3g} with MRR {mrr:.4f} (method {method.mrr:.4f}, {gap:+.4f}, noise "
            f"±{noise:.4f})")  # fmt: skip


def _curve_half_width(points: Sequence[Point], f: float) -> float:
    """The frontier's own MRR noise at fairness ``f``: its points' half-widths, linear
    between the two that bracket ``f`` (0 at λ = 0, the base itself)."""
    if (found := _bracket(points, f)) is None:
        return 0.0
    a, b, t = found
    return _half_width(a) + t * (_half_width(b) - _half_width(a))


def _half_width(p: Point) -> float:
    if p.mrr_low is None or p.mrr_high is None:
        return 0.0
    return (float(p.mrr_high) - float(p.mrr_low)) / 2


def _side(gap: float, noise: float) -> str:
    if gap > noise:
        return "above"
    if gap < -noise:
        return "below"
    return "level with"
