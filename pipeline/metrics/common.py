"""The metric record: a family's function and everything known about each value it reports.

A family (``pipeline/metrics/<name>.py``) computes several metric columns per query; each
is a :class:`Measure` with its key, direction, range, description and reference. The report
tables, plot labels, significance marks, the ir_measures names and the property tests'
ranges are read from these records (``pipeline.metrics.measure_of``), so a new metric is one
file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pipeline.config import NoConfig

if TYPE_CHECKING:
    import polars as pl

    from pipeline.metrics.inputs import EvalInputs, MetricFn, Summary

Direction = Literal["↑", "↓", "→0", "→0.5", "·"]
"""↑ higher is better, ↓ lower is better, →x closer to x is fairer (a signed value), ·
descriptive: no side is better (the neutral-first rate says how a method reaches its
neutrality, not whether it is fair); like a signed value it carries no †."""
Table = Literal["core", "extra", "overall"]
"""Where a measure appears in the report's tables: the per-cut-off tables (``core`` columns,
then ``extra`` ones) or the table of whole-ranking values (``overall``)."""


@dataclass(frozen=True)
class Measure:
    """One metric column of a family.

    ``key``: its column and metrics-JSON key; ``{k}`` stands for the cut-off (``NFaiRR@{k}``),
    absent for a value of the whole ranking (``gap-mean``). ``direction``: see
    ``Direction``. ``lo``/``hi``: its range (the property tests check it). ``description``:
    one line. ``fairness``: a fairness value (plot labels say "fairer"), else effectiveness.
    ``table``: its place in the report's tables (``None``: not shown there). ``magnitude``:
    for a signed measure, the key of its magnitude (``ARaB-tf@{k}`` → ``ARaB-tf-abs@{k}``),
    shown instead of it in the % change tables. ``label``: its name on plot axes when not
    its key (``|ARaB-tf|``). ``ir_measures``: its name as an ir_measures measure
    (``NFaiRR``), ``None`` when not offered there. Where the report shows it besides its
    tables: ``transfer`` (the held-out collection's section), ``sign_test`` (its title in the
    direction table, with an exact paired sign test against the baseline), ``headline`` (the
    model card's table, at cut-off 10), ``tradeoff`` (``(place, file stem)``: the y axis of a
    trade-off plot against the first ``core`` effectiveness measure). ``setting``: the
    record's setting that adds it (``trec_fair_2022``: the track's variant), ``None`` when
    the family always reports it. ``report``: its places in the report's sections as
    ``(section, position)`` pairs, ordered by position there: ``findings`` (the metrics
    every Finding reads, at cut-off 10: "fairer"/"more effective" from its ``direction``),
    ``controls`` (the Controls table's columns), ``judged`` (the judged-scope tables).
    """

    key: str
    direction: Direction
    description: str
    lo: float = -math.inf
    hi: float = math.inf
    fairness: bool = True
    table: Table | None = None
    magnitude: str | None = None
    label: str | None = None
    ir_measures: str | None = None
    transfer: bool = False
    sign_test: str | None = None
    headline: bool = False
    tradeoff: tuple[int, str] | None = None
    setting: str | None = None
    report: tuple[tuple[str, int], ...] = ()

    @property
    def base(self) -> str:
        """The key without its cut-off: ``NFaiRR``."""
        return self.key.split("@")[0]

    @property
    def per_cutoff(self) -> bool:
        return "{k}" in self.key

    @property
    def signed(self) -> bool:
        """A value whose fair point is a number (→0): its sign may flip; or a descriptive one
        (·). Neither carries the report's † (a difference is not a fairer ranking)."""
        return self.direction.startswith("→") or self.direction == "·"

    def column(self, k: int | None = None) -> str:
        """The column at cut-off ``k``."""
        return self.key.format(k=k) if self.per_cutoff else self.key

    def matches(self, column: str) -> bool:
        """Whether ``column`` is this measure (at any cut-off)."""
        if not self.per_cutoff:
            return column == self.key
        base, at, k = column.partition("@")
        return bool(at) and k.isdigit() and f"{base}@{{k}}" == self.key

    def axis_label(self, column: str) -> str:
        """``column`` with its direction, for plot axes: ``NFaiRR@10 ↑ fairer``."""
        at = column[len(self.base) :]
        name = f"{self.label or self.base}{at}"
        if self.direction == "·":
            return name
        return f"{name} {self.direction}" + (" fairer" if self.fairness else "")


@dataclass(frozen=True)
class Metric:
    """One metric family.

    ``name``: its key (the module's name). ``fn(ctx, cutoffs) -> per-query frame``
    (``pipeline.metrics.inputs.MetricFn``): ``query_id``, one Float64 column per measure
    value, Int64 per-query counts. ``measures``: its metric columns. ``reference``: the
    paper. ``order``: where its columns sit in per-query tables, the metrics JSON and the
    report (ascending; a new family may keep the default, after the shipped ones).
    ``summary``: aggregates that are not per-query means (``summarise(per_query) ->
    {key: value}``). ``ir_measures_native``: its measures are ir_measures' own (``RR``,
    ``nDCG``), not measures defined from this family. ``config``: the frozen dataclass of
    its own settings, the section ``evaluate.<name>`` (``NoConfig``: none); a family with
    settings takes them as a third argument, ``fn(ctx, cutoffs, cfg)``.
    """

    name: str
    fn: MetricFn
    measures: tuple[Measure, ...]
    reference: str
    order: int = 1000
    summary: Summary | None = None
    ir_measures_native: bool = False
    config: type = NoConfig

    def run(self, ctx: EvalInputs, cutoffs: tuple[int, ...], cfg: Any = None) -> pl.DataFrame:
        """``fn`` on ``ctx`` with its settings ``cfg`` (its config's defaults when ``None``)."""
        if self.config is NoConfig:
            return self.fn(ctx, cutoffs)
        return self.fn(ctx, cutoffs, self.config() if cfg is None else cfg)
