"""The *Design and power* and *Findings* sections of metrics/summary.md, generated from the
comparison table by the rules of ``pipeline.report.claims`` (SPEC §4.9)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.report.claims import design_rows, findings_lines, mde_text, verdicts

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


def findings_markdown(
    cmp: pl.DataFrame, baseline: str, *, skip: Sequence[str] = (),
    training: pl.DataFrame | None = None, seeds: Sequence[int] = (), alpha: float = 0.05,
) -> str:  # fmt: skip
    """The *Design and power* and *Findings* sections; ``training``: the comparison of the
    baseline (as the compared method) with the untrained model."""
    design = design_rows(cmp, baseline, skip)
    methods = [m for m in dict.fromkeys(cmp["method"].to_list()) if m not in {baseline, *skip}]
    n = int(design["n"].max()) if design.height else 0  # type: ignore[arg-type]
    models = int(design["models"].max()) if design.height else 0  # type: ignore[arg-type]
    m = len(methods)
    lines = [
        "## Design and power", "",
        f"Noise model: {noise_text(n, seeds, models)}. Each comparison with `{baseline}` is "
        f"a test with {TEST}, Bonferroni over the {m} compared methods (level α = "
        f"{alpha:g}/{m}). MDE = the difference this design detects with 80% power at that "
        "level, (t_{df,1−α/2m} + t_{df,0.8}) × the test's standard error, pooled over the "
        "compared methods (root mean square; each comparison's own MDE is in "
        "comparison.csv, and none is given where it exceeds what the metric can take). "
        "Seed spread: the baseline's std over seeds.", "",
        "| metric | baseline | seed spread | pooled sd of differences | MDE | MDE % of baseline |",
        "|---|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    for r in design.iter_rows(named=True):
        spread = "" if r["seed_std"] is None else f"{r['seed_std']:.4f}"
        pct = "" if r["mde_pct"] is None else f"{r['mde_pct']:.1f}%"
        lines.append(f"| {r['metric']} | {r['baseline']:.4f} | {spread} | {r['pooled_sd']:.4f} "
                     f"| {r['mde']:.4f} | {pct} |")  # fmt: skip
    lines += ["", "## Findings (generated from the intervals; pipeline/report/claims.py)", "",
              RULES, ""]  # fmt: skip
    if training is not None:
        lines += [training_effect(training), ""]
    lines += findings_lines(cmp, baseline, skip)
    return "\n".join(lines) + "\n"


RULES = (
    "Each method: **its verdict**, then what moved beyond noise (Bonferroni-level interval "
    "of method − baseline), its male-wins share against ½ and the metrics with no detectable "
    "difference (MDE). *Fairer* needs a fairness magnitude (NFaiRR, |ARaB|, LIWC, |gap|) to "
    "improve beyond noise, none to worsen, and the F/M balance (male-wins share, ties "
    "counting ½) to move beyond noise neither against ½ nor against the baseline; otherwise "
    "the verdict names what moved."
)


def training_effect(training: pl.DataFrame) -> str:
    """Whether training moved anything: the baseline (the compared method of ``training``)
    against the untrained model (its baseline)."""
    base = training["method"][0]
    found = verdicts(training, base)
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
