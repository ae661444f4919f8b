"""What the results allow a researcher to say (SPEC §4.9 "Wording"; issue 21).

Every sentence of the report's *Findings* (and of the README's discussion, copied from it by
``pipeline.report.readme``) is generated here from the comparison table, so no claim can
outrun its interval:

- a method is called **fairer / less fair / more / less effective** on a headline metric only
  where the interval of its difference from the baseline at the family-wise level
  (``ci_adj_low``, ``ci_adj_high``: level ``1 − α/m``, Bonferroni over the m compared
  methods; the test over queries × seeds of ``pipeline.report.significance``) excludes zero in
  that direction; otherwise the sentence says **no detectable difference** and gives the
  minimal detectable effect of the design that was run (``mde``: 80% power at ``α/m``);
- the **direction** (which version a method ranks first) is stated where the exact sign test
  against the baseline rejects at ``α/m``: the male-wins share and the neutral-first share;
- the design is stated: the test, the seeds, the queries and each headline metric's pooled
  MDE (the root mean square of the per-method ``sd_diff``), and the seed spread.

:func:`claims` returns the verdicts as data (the tests compare them with the intervals);
:func:`findings_markdown` renders them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
DIRECTION = (
    ("gap-male-wins", "ranks the male relevant version above the female one"),
    ("gap-neutral-first", "ranks the neutral relevant version above both gendered ones"),
)
SEED_SPREAD = "ARaB-tf-abs@10"


@dataclass(frozen=True)
class Claim:
    """One verdict: ``verdict`` is ``better``/``worse`` (in the metric's good direction),
    ``none`` (no detectable difference) or ``more``/``less`` (a direction metric)."""

    method: str
    metric: str
    verdict: str
    diff: float
    low: float | None
    high: float | None
    mde: float | None
    text: str


def _interval_verdict(row: Mapping[str, object], kind: str) -> str:
    lo, hi = row.get("ci_adj_low"), row.get("ci_adj_high")
    if lo is None or hi is None:
        return "none"
    if float(lo) > 0:  # type: ignore[arg-type]
        return "worse" if kind == "unfair" else "better"
    if float(hi) < 0:  # type: ignore[arg-type]
        return "better" if kind == "unfair" else "worse"
    return "none"


WORDS = {
    ("fair", "better"): "fairer", ("fair", "worse"): "less fair",
    ("unfair", "better"): "fairer", ("unfair", "worse"): "less fair",
    ("effective", "better"): "more effective", ("effective", "worse"): "less effective",
}  # fmt: skip


def _num(x: object) -> str:
    return f"{float(x):+.4f}" if x is not None else "?"  # type: ignore[arg-type]


def claims(cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = ()) -> list[Claim]:
    """The verdicts of every compared method on the headline and direction metrics."""
    rows = {(r["method"], r["metric"]): r for r in cmp.iter_rows(named=True)}
    methods = [m for m in dict.fromkeys(cmp["method"].to_list()) if m not in {baseline, *skip}]
    n_compared = max(1, len(methods))
    out = []
    for m in methods:
        for metric, kind in HEADLINE:
            row = rows.get((m, metric))
            if row is None or row.get("diff") is None:
                continue
            verdict = _interval_verdict(row, kind)
            if verdict == "none":
                gap = row.get("mde")
                text = f"no detectable difference in {metric} (MDE {float(gap):.4f})" if gap \
                    else f"no detectable difference in {metric}"  # fmt: skip
            else:
                text = (f"{WORDS[(kind, verdict)]} by {metric} ({_num(row['diff'])} "
                        f"[{_num(row['ci_adj_low'])}, {_num(row['ci_adj_high'])}])")  # fmt: skip
            out.append(Claim(m, metric, verdict, float(row["diff"]), row.get("ci_adj_low"),
                             row.get("ci_adj_high"), row.get("mde"), text))  # fmt: skip
        for metric, what in DIRECTION:
            row, base = rows.get((m, metric)), rows.get((baseline, metric))
            if row is None or row.get("p_sign") is None or base is None:
                continue
            p_adj = min(1.0, float(row["p_sign"]) * n_compared)
            plus, minus = int(row["sign_plus"]), int(row["sign_minus"])
            if p_adj >= 0.05:
                continue
            verdict = "more" if plus > minus else "less"
            text = (f"{what} {'more' if verdict == 'more' else 'less'} often than the baseline "
                    f"({float(row['mean']):.0%} vs {float(base['mean']):.0%} of queries; sign test "
                    f"+{plus}/−{minus}, adjusted p {p_adj:.2g})")  # fmt: skip
            out.append(Claim(m, metric, verdict, float(row["diff"] or 0.0), None, None, None,
                             text))  # fmt: skip
    return out


def design_rows(cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = ()) -> pl.DataFrame:
    """Per headline metric: the baseline's value and seed spread, the pooled sd of the
    per-query differences and the MDE of the design (queries, seeds, m compared): the root
    mean square of the compared methods' MDEs (each from its test's standard error, seeds'
    part included)."""
    compared = cmp.filter(~pl.col("method").is_in([baseline, *skip]))
    rows = []
    for metric, _ in HEADLINE:
        part = compared.filter(pl.col("metric") == metric)
        base = cmp.filter((pl.col("method") == baseline) & (pl.col("metric") == metric))
        sds = [s for s in part["sd_diff"].to_list() if s is not None]
        gaps = [g for g in part["mde"].to_list() if g is not None]
        if not sds or not gaps or base.height == 0:
            continue
        pooled = math.sqrt(sum(s * s for s in sds) / len(sds))
        gap = math.sqrt(sum(g * g for g in gaps) / len(gaps))
        n = int(part["n_pairs"].max())  # type: ignore[arg-type]
        value = base["mean"][0]
        rows.append({"metric": metric, "baseline": value, "seed_std": base["std"][0],
                     "pooled_sd": pooled, "n": n, "mde": gap,
                     "mde_pct": 100 * gap / abs(value) if value else None})  # fmt: skip
    return pl.DataFrame(rows)


def findings_markdown(
    cmp: pl.DataFrame, baseline: str, *, skip: Sequence[str] = (),
    training: pl.DataFrame | None = None, seeds: Sequence[int] = (), alpha: float = 0.05,
) -> str:  # fmt: skip
    """The *Design and power* and *Findings* sections of summary.md; ``training``: the
    comparison of the baseline (as the compared method) with the untrained model."""
    design = design_rows(cmp, baseline, skip)
    methods = [m for m in dict.fromkeys(cmp["method"].to_list()) if m not in {baseline, *skip}]
    n = int(design["n"].max()) if design.height else 0  # type: ignore[arg-type]
    seed_text = "one seed (training noise is not in the intervals)"
    if len(seeds) > 1:
        seed_text = (f"{len(seeds)} seeds ({', '.join(map(str, seeds))}), each drawing its own "
                     "sampled negatives, training order and dropout/initialisation")  # fmt: skip
    lines = [
        "## Design and power", "",
        f"Noise model: {n} queries × {seed_text}. Each comparison with `{baseline}` is a "
        "test over queries × seeds (crossed random effects for query and seed on the paired "
        "differences, Satterthwaite df; pipeline/stats.py `seed_query_test`), Bonferroni over "
        f"the {len(methods)} compared methods. MDE = the difference this design detects with "
        f"80% power at α = {alpha:g}/{len(methods)}: (t_df quantiles) × the test's standard "
        "error, which holds the seeds' part of the variance as well as the queries', pooled "
        "over the compared methods (root mean square; each comparison's own MDE is in "
        "comparison.csv). With few seeds the seed part can dominate: the per-query sd alone "
        "would promise a smaller MDE than the design delivers. Seed spread: the baseline's std "
        "over seeds.", "",
        "| metric | baseline | seed spread | pooled sd of differences | MDE | MDE % of baseline |",
        "|---|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    for r in design.iter_rows(named=True):
        spread = "" if r["seed_std"] is None else f"{r['seed_std']:.4f}"
        pct = "" if r["mde_pct"] is None else f"{r['mde_pct']:.1f}%"
        lines.append(f"| {r['metric']} | {r['baseline']:.4f} | {spread} | {r['pooled_sd']:.4f} "
                     f"| {r['mde']:.4f} | {pct} |")  # fmt: skip
    lines += ["", "## Findings (generated from the intervals; pipeline/report/claims.py)", ""]
    if training is not None:
        lines += [_training_effect(training), ""]
    by_method: dict[str, list[Claim]] = {}
    for c in claims(cmp, baseline, skip):
        by_method.setdefault(c.method, []).append(c)
    for m in methods:
        found = [c.text for c in by_method.get(m, []) if c.verdict != "none"]
        quiet = [c.metric for c in by_method.get(m, []) if c.verdict == "none"]
        text = "; ".join(found) if found else "no detectable difference from the baseline"
        if found and quiet:
            text += "; no detectable difference in " + ", ".join(quiet)
        lines.append(f"- **{m}**: {text}.")
    return "\n".join(lines) + "\n"


def _training_effect(training: pl.DataFrame) -> str:
    """Whether training moved anything: the baseline (the compared method of ``training``)
    against the untrained model (its baseline)."""
    base = training["method"][0]
    found = [c for c in claims(training, base) if c.verdict != "none"]
    quiet = [c for c in claims(training, base) if c.verdict == "none"]
    trained = next((c.method for c in found + quiet), "the trained baseline")
    head = f"Training itself (`{trained}` against the untrained `{base}`): "
    if not found:
        return head + "no detectable difference on any headline metric (" + ", ".join(
            f"{c.metric} MDE {c.mde:.4f}" for c in quiet if c.mde) + ")."  # fmt: skip
    tail = "; no detectable difference in " + ", ".join(c.metric for c in quiet) if quiet else ""
    return head + "; ".join(c.text for c in found) + tail + "."
