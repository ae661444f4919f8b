"""The *Design and power* and *Findings* sections of metrics/summary.md, generated from the
comparison table by the rules of ``pipeline.report.claims`` and
``pipeline.report.verdict_rule`` (SPEC §4.9; issue 40)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.model_power import RUNS, simulated_mde
from pipeline.report.claims import (
    DEFAULT_RULE,
    DIRECTION,
    HEADLINE,
    findings_lines,
    mde_text,
    verdicts,
)
from pipeline.report.verdict_rule import FAIRNESS, VerdictRule, scope_rows

TEST = (
    "the trained model as the unit of noise: crossed random effects for the model (seed × "
    "fold) and the query on the paired differences, no component truncated at zero, a t "
    "interval with Satterthwaite df taken with the model mean square at its 95% upper "
    "confidence limit (pipeline/model_test.py; its rejection rate under no difference is "
    "checked by simulation at the report's level, tests/unit/test_model_test.py)"
)


def noise_text(n: int, seeds: Sequence[int], models: int) -> str:
    """``117 queries × 3 seeds (1, 2, 3) × 2 folds = 6 trained models per method …``."""
    if len(seeds) < 2:
        return (f"{n} queries × one seed: the model component cannot be told from the "
                "queries' and is not in the intervals (paired t-test over queries)")  # fmt: skip
    folds = max(1, models // len(seeds))
    return (f"{n} queries × {len(seeds)} seeds ({', '.join(map(str, seeds))}) × {folds} "
            f"fold(s) = {models} trained models per method, each query scored by its fold's "
            "model in every seed; a seed draws its own negatives, training order and "
            "dropout/initialisation")  # fmt: skip


def design_rows(
    cmp: pl.DataFrame, baseline: str, skip: Sequence[str] = (), alpha: float | None = None
) -> pl.DataFrame:
    """Per headline metric: the baseline's value and seed spread, the pooled sd of the
    per-query differences and the MDE of the design (queries, models, m compared): the root
    mean square of the compared methods' formula MDEs (each from its test's standard error),
    and with ``alpha`` and fitted components (``var_*``) the simulated MDE (``sim_mde``: what
    the report's own test detects with 80% power at ``alpha``/m, from the mean components)."""
    compared = cmp.filter(~pl.col("method").is_in([baseline, *skip]))
    m = compared["method"].n_unique()
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
        n, models = int(part["n_pairs"].max()), int(part["n_models"].max() or 0)  # type: ignore[arg-type]
        sim = _simulated(part, n, int(base["n_seeds"][0] or 1), models, alpha, m)
        rows.append({
            "metric": metric, "baseline": value, "seed_std": base["std"][0],
            "pooled_sd": math.sqrt(sum(s * s for s in sds) / len(sds)), "n": n,
            "models": models, "mde": gap, "mde_pct": 100 * gap / abs(value) if value else None,
            "sim_mde": sim, "sim_pct": 100 * sim / abs(value) if value and sim else None,
        })  # fmt: skip
    return pl.DataFrame(rows, schema_overrides={"sim_mde": pl.Float64, "sim_pct": pl.Float64})


def _simulated(
    part: pl.DataFrame, n: int, seeds: int, models: int, alpha: float | None, m: int
) -> float | None:
    """The simulated MDE of one metric from the mean fitted components (null without them)."""
    cols = ["var_model", "var_query", "var_resid"]
    if alpha is None or seeds < 2 or not set(cols) <= set(part.columns):
        return None
    comp = part.select(cols).drop_nulls()
    if comp.height == 0 or not any(v > 0 for v in comp.mean().row(0)):
        return None
    fold = np.tile(np.arange(n) % max(1, models // seeds), (seeds, 1))
    try:
        return simulated_mde(comp.mean().row(0), fold, alpha / max(1, m))
    except InputError:  # the test never reaches 80% power on these components
        return None


def findings_markdown(
    cmp: pl.DataFrame, baseline: str, *, skip: Sequence[str] = (),
    training: pl.DataFrame | None = None, seeds: Sequence[int] = (), alpha: float = 0.05,
    rule: VerdictRule = DEFAULT_RULE, scopes: Mapping[str, pl.DataFrame | None] | None = None,
) -> str:  # fmt: skip
    """The *Design and power* and *Findings* sections; ``training``: the comparison of the
    baseline (as the compared method) with the untrained model; ``scopes``: the judged
    scope's and the transfer collection's comparisons (keys ``judged``, ``transfer``), on
    which each line reads the primary effect."""
    design = design_rows(cmp, baseline, skip, alpha)
    methods = [m for m in dict.fromkeys(cmp["method"].to_list()) if m not in {baseline, *skip}]
    n = int(design["n"].max()) if design.height else 0  # type: ignore[arg-type]
    models = int(design["models"].max()) if design.height else 0  # type: ignore[arg-type]
    m = len(methods)
    lines = [
        "## Design and power", "",
        f"Noise model: {noise_text(n, seeds, models)}. Each comparison with `{baseline}` is "
        f"a test with {TEST}, Bonferroni over the {m} compared methods (level α = "
        f"{alpha:g}/{m}). Simulated MDE = the difference that test detects with 80% power at "
        f"that level, found by simulating {RUNS:,} runs of this design from the variance "
        "components fitted to the compared methods (their mean; pipeline/model_power.py). "
        "Formula MDE = (t_{df,1−α/2m} + t_{df,0.8}) × the test's standard error, pooled over "
        "the compared methods (root mean square): it treats the standard error as known and "
        "overstates the power (the test detects it 63–75% of the time, issue 40); each "
        "comparison's MDE in comparison.csv and in the Findings is still this formula's (none "
        "is given where it exceeds what the metric can take). Seed spread: the baseline's "
        "std over seeds.", "",
        "| metric | baseline | seed spread | pooled sd of differences | simulated MDE "
        "| MDE % of baseline | formula MDE |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    for r in design.iter_rows(named=True):
        spread = "" if r["seed_std"] is None else f"{r['seed_std']:.4f}"
        sim = "" if r["sim_mde"] is None else f"{r['sim_mde']:.4f}"
        pct = r["sim_pct"] if r["sim_pct"] is not None else r["mde_pct"]
        pct_text = "" if pct is None else f"{pct:.1f}%"
        lines.append(f"| {r['metric']} | {r['baseline']:.4f} | {spread} | {r['pooled_sd']:.4f} "
                     f"| {sim} | {pct_text} | {r['mde']:.4f} |")  # fmt: skip
    lines += ["", "## Findings (generated from the intervals; pipeline/report/claims.py)", "",
              rules_text(rule, m, alpha), ""]  # fmt: skip
    if training is not None:
        lines += [training_effect(training, rule), ""]
    lines += findings_lines(cmp, baseline, skip, rule, scope_rows(scopes or {}) or None)
    return "\n".join(lines) + "\n"


def rules_text(rule: VerdictRule, m: int, alpha: float) -> str:
    """The Findings' header: the verdict rule (primary metric, Holm, margin, scopes)."""
    return (
        "Each method: **its verdict**, then how its primary effect reads on the judged scope "
        "and on the transfer collection, what moved beyond noise (Bonferroni-level interval "
        "of method − baseline), its F/M balance and the metrics with no detectable difference "
        f"(MDE). **Primary fairness metric: {rule.primary}** (`report.primary`): *fairer* / "
        f"*less fair* is decided by its interval alone, one test per method at α = {alpha:g}/"
        f"{m}, so the verdicts have one family-wise error rate. The other fairness magnitudes "
        f"({', '.join(x for x in FAIRNESS if x != rule.primary)}) are secondary, Holm across "
        "them within each method; "
        "one that worsens still vetoes a plain *fairer*. **Balance**: the male-wins share "
        "(ties counting ½) is *balanced* only where two one-sided tests at the same level "
        "establish both the share against ½ and its change vs the baseline within "
        f"{rule.points} (`report.balance_margin`); a shift whose estimate leaves the margin "
        'names its side ("male-leaning: +9.6 points"; "more male wins" where it is also '
        "beyond noise); otherwise *balance not established* (its intervals are wider than "
        "the margin). *Fairer* alone needs the primary to improve, nothing to worsen and the "
        "balance to be established. On a scope the primary effect *holds* (beyond noise, same "
        "side), *reverses* (its estimate on the other side) or *vanishes* (same side, not "
        "beyond noise), with that comparison's MDE in % of the baseline."
    )


def training_effect(training: pl.DataFrame, rule: VerdictRule = DEFAULT_RULE) -> str:
    """Whether training moved anything: the baseline (the compared method of ``training``)
    against the untrained model (its baseline)."""
    base = training["method"][0]
    found = verdicts(training, base, rule=rule)
    if not found:
        return f"Training itself (against the untrained `{base}`): not tested."
    v = found[0]
    rows = {(r["method"], r["metric"]): r for r in training.iter_rows(named=True)}
    head = f"Training itself (`{v.method}` against the untrained `{base}`): **{v.label}**. "
    moved = [c.text for c in v.claims if c.verdict != "none"]
    quiet = [f"{c.metric} ({mde_text(rows[(v.method, c.metric)])})"
             for c in v.claims if c.verdict == "none"]  # fmt: skip
    tail = ["no detectable difference in " + ", ".join(quiet)] if quiet else []
    return head + "; ".join(moved + tail) + "."
