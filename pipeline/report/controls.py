"""Controls tested against their treatment (SPEC §4.9; issue 29): the *Controls* section of
metrics/summary.md, which docs/decisions.md embeds ("What the controls show").

The pairs are data: ``controls:`` in params.yaml maps each control to the methods it is a
control of (``of``) and what the pair isolates; the untrained model (``zero-shot``) is the
control of training itself (``baseline − zero-shot``). Each pair is compared directly,
treatment − control, by the report's test (the trained model as the unit of noise,
``pipeline.report.significance.compare`` with the control as the baseline), Bonferroni over
the pairs, and read by the report's rules (``pipeline.report.claims``: magnitude and
direction together).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import polars as pl

from pipeline.report.claims import DIRECTION, HEADLINE, excludes_zero, finding_line, verdict
from pipeline.report.significance import ALPHA, PerQuery, compare
from pipeline.report.tables import FINDINGS_CUTOFF, placed

TRAINING = "training itself"
COLUMNS = tuple(m.key.format(k=FINDINGS_CUTOFF) for m in placed("controls"))
"""The Controls table's columns (those present), from the metric records (``Measure.report``,
section "controls": NFaiRR@10, ARaB-tf-abs@10, gap-male-wins, gap-neutral-first, MRR@10);
the Findings lines read every headline and direction metric."""


class ControlEntry(Protocol):
    """What the report reads of a ``controls:`` entry (``pipeline.params.ControlParams``)."""

    of: list[str]
    isolates: str


@dataclass(frozen=True)
class Pair:
    """One direct comparison: ``treatment − control``, and what it isolates."""

    treatment: str
    control: str
    isolates: str

    @property
    def name(self) -> str:
        return f"{self.treatment} − {self.control}"


def control_pairs(
    controls: Mapping[str, ControlEntry], baseline: str | None = None, untrained: str | None = None
) -> list[Pair]:
    """Every (treatment, control) pair of ``controls``, then training itself (``baseline −
    untrained``) when both are given."""
    pairs = [Pair(t, c, e.isolates) for c, e in controls.items() for t in e.of]
    if baseline is not None and untrained is not None:
        pairs.append(Pair(baseline, untrained, TRAINING))
    return pairs


def compare_controls(
    per_query: Mapping[str, PerQuery], pairs: Sequence[Pair], *, folds: pl.DataFrame | None = None,
    alpha: float = ALPHA, correction: str = "bonferroni",
) -> pl.DataFrame | None:  # fmt: skip
    """One comparison frame over every pair (column ``control``; ``method`` is the
    treatment), the adjusted level over the pairs; null without pairs."""
    if not pairs:
        return None
    first = next(iter(per_query.values()))
    frame = first if isinstance(first, pl.DataFrame) else next(iter(first.values()))
    metrics = [m for m in (*(k for k, _ in HEADLINE), *DIRECTION) if m in frame.columns]
    parts = []
    for p in pairs:
        two = {p.control: per_query[p.control], p.treatment: per_query[p.treatment]}
        cmp = compare(two, p.control, metrics, alpha=alpha, correction=correction, folds=folds,
                      family=len(pairs))  # fmt: skip
        parts.append(cmp.with_columns(pl.lit(p.control).alias("control")))
    return pl.concat(parts)


def _cell(row: Mapping[str, Any] | None) -> str:
    if row is None or row.get("diff") is None:
        return ""
    side = excludes_zero(row.get("ci_adj_low"), row.get("ci_adj_high"))
    lo, hi = row.get("ci_adj_low"), row.get("ci_adj_high")
    return f"{row['diff']:+.4f} [{lo:+.4f}, {hi:+.4f}]" + ("†" if side else "")


def controls_markdown(ccmp: pl.DataFrame, pairs: Sequence[Pair], n_controls: int) -> str:
    """The *Controls* section: a table of the differences and one verdict line per pair."""
    columns = [c for c in COLUMNS if c in set(ccmp["metric"].to_list())]
    lines = [
        "## Controls: each treatment against its control", "",
        f"{n_controls} controls (params.yaml `controls:`; the untrained model is the control "
        f"of training itself) in {len(pairs)} pairs, each compared directly (treatment − "
        "control) by the report's test, Bonferroni over the "
        f"{len(pairs)} pairs; [lo, hi]: the interval at that level, † where it excludes 0. "
        "Verdicts by the Findings' rules, the control in the baseline's place.", "",
        "| treatment − control | isolates | " + " | ".join(columns) + " | verdict |",
        "|---|---|" + "---:|" * len(columns) + "---|",
    ]  # fmt: skip
    findings = []
    for p in pairs:
        part = ccmp.filter((pl.col("control") == p.control)
                           & pl.col("method").is_in([p.control, p.treatment]))  # fmt: skip
        rows = {(r["method"], r["metric"]): r for r in part.iter_rows(named=True)}
        v = verdict(p.treatment, rows, p.control, "its control")
        cells = [_cell(rows.get((p.treatment, c))) for c in columns]
        label = v.label if v else "not tested"
        lines.append(f"| {p.name} | {p.isolates} | " + " | ".join(cells) + f" | {label} |")
        if v is not None:
            findings.append(finding_line(v, rows, p.name))
    return "\n".join([*lines, "", *findings, ""])


def controls_text(ccmp: pl.DataFrame | None, pairs: Sequence[Pair], n_controls: int) -> str:
    """The section, or nothing when no pair was compared."""
    return "" if ccmp is None else "\n" + controls_markdown(ccmp, pairs, n_controls)


def training_rows(ccmp: pl.DataFrame | None, pairs: Sequence[Pair]) -> pl.DataFrame | None:
    """The comparison of training itself (baseline vs the untrained model) out of
    ``ccmp``, in the shape ``pipeline.report.findings.training_effect`` reads."""
    pair = next((p for p in pairs if p.isolates == TRAINING), None)
    if ccmp is None or pair is None:
        return None
    return ccmp.filter(pl.col("control") == pair.control).drop("control")
