"""The body of the `report` stage: read every method's evaluation, write tables and figures.

Inputs (per method, in the order given; the first-stage row `bm25` included):
`<eval_dir>/<method>/metrics.json` and `<eval_dir>/<method>/per_query.parquet`, or, for a
method trained with several seeds, `<eval_dir>/<method>/seed-<n>/per_query.parquet` (one folder
per seed, no top-level per_query.parquet). Training curves: the DVCLive files of train@,
`<train_dir>/<method>/plots/metrics/[seed-<n>/]fold-<k>/{loss,lr}.tsv` (`dvclive/`).

Outputs (all written atomically):

| file | content |
|---|---|
| `<out_dir>/summary.md` | per cut-off: absolute table (a), % change vs baseline (b), gap tables |
| `<out_dir>/summary.csv` | one row per method, every numeric key of its metrics.json |
| `<out_dir>/comparison.csv` | one row per (method, metric): mean, std, change, CI, t, p, adj. p |
| `<out_dir>/controls.csv` | the same per control pair (treatment − control; column `control`) |
| `<out_dir>/comparison_ranx.json` | the headline metrics compared as a ranx `Report.to_dict()` |
| `<plots_dir>/tradeoff.csv` | `method, MRR@k, NFaiRR@k, ARaB-tf-abs@k, family` (DVC plot data) |
| `<plots_dir>/tradeoff_nfairr.png`, `tradeoff_arab.png` | fairness vs MRR, one point per method |
| `<out_dir>/variation.md`, `<plots_dir>/variation_bins.png` | nDCG@10 μ/σ/c_v per complexity bin |
| `<plots_dir>/training.png` | training loss and learning rate of every trained method |
| `<out_dir>/adversary.csv` | AdvBERT's adversary per model: accuracy vs majority (`train_dir`) |
| `<plots_dir>/frontier.png` | re-ranking frontier of the `post:` entries, every trained method |
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pipeline import io, schemas
from pipeline.report import tidy
from pipeline.report.adversary import adversary_markdown, adversary_table
from pipeline.report.answer import answer_markdown
from pipeline.report.claims import DEFAULT_RULE
from pipeline.report.controls import (
    ControlEntry,
    compare_controls,
    control_pairs,
    controls_text,
    training_rows,
)
from pipeline.report.family_figures import tradeoff_figure, training_figure, whiskers
from pipeline.report.findings import findings_markdown
from pipeline.report.plots import save_png
from pipeline.report.post_section import post_report
from pipeline.report.ranx_export import ranx_report
from pipeline.report.scopes import JUDGED, judged_markdown, scope_comparison
from pipeline.report.significance import ALPHA, as_seeds, compare
from pipeline.report.tables import (
    CHANGE_AT_K,
    CHANGE_OVERALL,
    EFFECTIVE,
    PLOTTED,
    report_markdown,
    summary_frame,
    unmark_saturated,
)
from pipeline.report.transfer import (
    TRANSFER,
    transfer_comparison,
    transfer_markdown,
    transfer_notes,
)
from pipeline.report.variation import write_variation
from pipeline.report.verdict_rule import VerdictRule, scope_rows
from pipeline.stats import BOOTSTRAP_SAMPLES, BOOTSTRAP_SEED

log = logging.getLogger(__name__)
ZERO_SHOT = "zero-shot"  # the untrained reference row: the training effect is tested against it

TRADEOFF = (EFFECTIVE.key, *(m.key for m in PLOTTED))
RANX_JSON = "comparison_ranx.json"


def read_curve(live_dir: str | Path) -> pl.DataFrame:
    """A method's training curve `step, loss, lr` from its DVCLive folder (`dvclive/<method>`):
    at each step, the mean over the method's fold (and seed) models that logged it."""
    root = Path(live_dir) / "plots" / "metrics"
    runs = sorted(p.parent for p in root.rglob("loss.tsv"))
    if not runs:
        raise io.ArtifactError(
            f"{root}: no <run>/loss.tsv training log. Run `dvc repro` to train the method."
        )
    parts = []
    for run in runs:
        loss, lr = (pl.read_csv(run / f"{k}.tsv", separator="\t") for k in ("loss", "lr"))
        parts.append(loss.join(lr, on="step", how="inner").select("step", "loss", "lr"))
    frame = (
        pl.concat(parts)
        .cast({"step": pl.Int64, "loss": pl.Float64, "lr": pl.Float64})
        .group_by("step")
        .agg(pl.col("loss", "lr").mean())
        .sort("step")
    )
    out = pl.from_arrow(schemas.validate(frame.to_arrow(), schemas.CURVE, str(root)))
    assert isinstance(out, pl.DataFrame)
    return out


def tradeoff_frame(cmp: pl.DataFrame, k: int) -> pl.DataFrame:
    """`method, MRR@k, NFaiRR@k, ARaB-tf-abs@k` (means over seeds) from a comparison frame."""
    cols = [c.format(k=k) for c in TRADEOFF]
    wide = (
        cmp.filter(pl.col("metric").is_in(cols))
        .pivot(on="metric", index="method", values="mean", aggregate_function="first")
        .with_columns(pl.lit(None, pl.Float64).alias(c) for c in cols if c not in cmp["metric"])
    )
    return wide.select("method", *cols)


def ranx_metrics(cmp: pl.DataFrame, cutoffs: Sequence[int]) -> list[str]:
    """The metrics of the ranx export: the change table's at @10 (else the first cut-off) and
    the gap magnitude, those present (every model pair × metric makes the file grow fast)."""
    k = 10 if 10 in cutoffs else cutoffs[0]
    present = set(cmp["metric"].to_list())
    return [m for m in (*(c.format(k=k) for c in CHANGE_AT_K), *CHANGE_OVERALL) if m in present]


def _tradeoff_plots(
    cmp: pl.DataFrame, k: int, plots_dir: Path, baseline: str, reference: Collection[str],
    families: Mapping[str, str] | None = None,
) -> list[Path]:  # fmt: skip
    points = tradeoff_frame(cmp, k)
    family = [("reference" if m in reference else (families or {}).get(m, "methods"))
              for m in points["method"]]  # fmt: skip
    table = points.with_columns(pl.Series("family", family, pl.Utf8))  # the HTML's colours
    io.write_text(table.write_csv(float_precision=6), plots_dir / "tradeoff.csv")
    written = [plots_dir / "tradeoff.csv"]
    mrr = EFFECTIVE.column(k)
    spans, mde = whiskers(cmp, [mrr, *(m.column(k) for m in PLOTTED)])
    for name, fair in ((m.tradeoff[1], m.column(k)) for m in PLOTTED if m.tradeoff):
        if points[fair].null_count() == points.height:
            log.warning("no %s values; %s trade-off plot skipped", fair, name)
            continue
        fig = tradeoff_figure(points, mrr, fair, baseline=baseline, reference=reference,
                              families=families, intervals=spans, mde=mde)  # fmt: skip
        save_png(fig, plots_dir / f"tradeoff_{name}.png")
        written.append(plots_dir / f"tradeoff_{name}.png")
    return written


def _figures(
    cmp: pl.DataFrame,
    cutoffs: Sequence[int],
    plots_dir: Path,
    train_dir: str | Path | None,
    baseline: str,
    reference: Sequence[str],
    families: Mapping[str, str] | None = None,
) -> list[Path]:
    """Trade-off data and scatters at @10 (else the first cut-off), and the training curves,
    one panel per family of methods (`families`, pipeline/report/family_figures.py)."""
    k = 10 if 10 in cutoffs else cutoffs[0]
    written = _tradeoff_plots(cmp, k, plots_dir, baseline, reference, families)
    if train_dir is not None:
        trained = [m for m in dict.fromkeys(cmp["method"].to_list()) if m not in reference]
        curves = {m: read_curve(Path(train_dir) / m) for m in trained}
        save_png(training_figure(curves, families), plots_dir / "training.png")
        written.append(plots_dir / "training.png")
    return written


def _with_answer(
    md: str, cmp: pl.DataFrame, baseline: str, reference: Sequence[str], rule: VerdictRule,
    k: int, alpha: float, info: Mapping[str, str], seeds: Sequence[int],
    scopes: Mapping[str, pl.DataFrame | None], post_cmp: pl.DataFrame | None,
    post: Mapping[str, Mapping[str, Any]],
) -> str:  # fmt: skip
    """``md`` with *What the default found* (`pipeline.report.answer`) after its title."""
    parts = [f"`{info[key]}`" for key in ("dataset", "model") if key in info]
    runs = f"{len(seeds)} seeds × " if len(seeds) > 1 else ""
    setting = "On " + ", ".join(parts) + (f" ({runs}{info['evaluation']})"
                                          if "evaluation" in info else "")  # fmt: skip
    section = answer_markdown(cmp, baseline, skip=reference, rule=rule, k=k, alpha=alpha,
                              setting=setting, scopes=scope_rows(scopes), post_cmp=post_cmp,
                              post=post)  # fmt: skip
    title, _, rest = md.partition("\n")  # rest: the setting and the tables' legend
    return f"{title}\n\n{section}\n## Reading the tables\n{rest}"


def build_report(
    method_names: Sequence[str],
    eval_dir: str | Path,
    out_dir: str | Path,
    cutoffs: Sequence[int],
    baseline: str,
    *,
    reference: Sequence[str] = ("bm25",),
    info: Mapping[str, str] | None = None,
    plots_dir: str | Path | None = None,
    train_dir: str | Path | None = None,
    alpha: float = ALPHA,
    correction: str = "bonferroni",
    bootstrap_samples: int = BOOTSTRAP_SAMPLES,
    bootstrap_seed: int = BOOTSTRAP_SEED,
    folds: pl.DataFrame | None = None,
    controls: Mapping[str, ControlEntry] | None = None,
    saturated: Mapping[str, str] | None = None,
    transfer_data: str | Path | None = None,
    families: Mapping[str, str] | None = None,
    post: Mapping[str, Mapping[str, Any]] | None = None,
    rule: VerdictRule = DEFAULT_RULE,
) -> list[Path]:
    """Write the summary tables (and, with `plots_dir`, the figures); return the paths written.

    `method_names` fixes the row order (take it from params, not a glob: removed methods leave
    stale folders); `baseline` is the method every other one is compared with; `reference`
    rows (the first-stage ranking) are shown but not compared. `folds` (`query_id, fold[,
    seed]`): the fold model that scored each query (the test's unit is the trained model);
    `controls`: `control → {of, isolates}`, each compared with its treatments directly.
    `saturated`: metric bases the collection saturates by construction, with why (its source
    record's ``saturated``).
    `transfer_data`: the held-out collection's tables (`data/transfer`), whose confounds
    the transfer section states.
    `post`: the ``post:`` entries (their settings), each also in `method_names`: compared
    with the baseline as their own family, in their own section (`pipeline.report.post_section`).
    `rule`: the verdicts' primary metric and balance margin (params.yaml `report.primary`,
    `report.balance_margin`; `pipeline.report.verdict_rule`).
    """
    out, written, post = Path(out_dir), [], dict(post or {})
    metrics = {m: io.read_json(Path(eval_dir) / m / "metrics.json") for m in method_names}
    views = tidy.views(tidy.read_table(eval_dir, [*metrics], scopes=(JUDGED, TRANSFER)))
    method_names = [m for m in method_names if m not in post]
    per_query = tidy.pick(views[tidy.ALL], method_names)
    assert per_query is not None  # read_table raises where a method has no whole-list values
    cmp = compare(
        per_query, baseline, reference=reference, alpha=alpha, correction=correction, folds=folds
    )
    transfer = transfer_comparison(views.get(TRANSFER, {}), method_names, baseline, reference,
                                   alpha, correction)  # fmt: skip
    judged = scope_comparison(views.get(JUDGED, {}), method_names, baseline, reference, alpha,
                              correction, folds=folds)  # fmt: skip
    untrained = next((r for r in reference if r == ZERO_SHOT and r in per_query), None)
    pairs = [p for p in control_pairs(controls or {}, baseline, untrained)
             if {p.treatment, p.control} <= set(per_query)]  # fmt: skip
    ccmp = compare_controls(per_query, pairs, folds=folds, alpha=alpha, correction=correction)
    training = training_rows(ccmp, pairs)
    first = metrics[method_names[0]]
    full_info = {k: str(first[k]) for k in ("tokenizer", "lexicon") if k in first} | dict(
        info or {}
    )
    shown, note = unmark_saturated(cmp, saturated or {})
    md = report_markdown(
        shown,
        cutoffs,
        baseline,
        reference=reference,
        info=full_info,
        alpha=alpha,
        correction=correction,
        note=note,
    )
    seeds = sorted(as_seeds(per_query[baseline]))
    md += "\n" + findings_markdown(cmp, baseline, skip=reference, training=training,
                                   seeds=seeds if len(seeds) > 1 else (), alpha=alpha, rule=rule,
                                   scopes={JUDGED: judged, TRANSFER: transfer})  # fmt: skip
    md += controls_text(ccmp, pairs, len(controls or {}))
    main_cmp = cmp  # the headline comparisons (scoped rows are added below)
    if judged is not None:
        md += judged_markdown(judged, baseline, reference, cutoffs)
        scoped = pl.format("{}.{}", pl.lit(JUDGED), "metric").alias("metric")
        cmp = pl.concat([cmp, judged.with_columns(scoped)])
    if transfer is not None:
        notes = transfer_notes(transfer_data) if transfer_data is not None else ()
        md += transfer_markdown(transfer, baseline, reference, cutoffs, notes, rule)
        named = pl.format("{}.{}", pl.lit(TRANSFER), "metric").alias("metric")
        cmp = pl.concat([cmp, transfer.with_columns(named)])
    k = 10 if 10 in cutoffs else cutoffs[0]
    frontier_fig, post_rows = None, None
    if post:
        post_md, post_rows, frontier_fig = post_report(
            views, baseline, post, cmp, k, alpha=alpha, correction=correction, folds=folds)
        md += "\n" + post_md
        cmp = pl.concat([cmp, post_rows])
    md = _with_answer(md, main_cmp, baseline, reference, rule, k, alpha, full_info, seeds,
                      {JUDGED: judged, TRANSFER: transfer}, post_rows, post)
    if train_dir is not None:  # its header alone when no method trains an adversary
        adversary = adversary_table(train_dir, method_names)
        md += adversary_markdown(adversary)
        io.write_text(adversary.write_csv(float_precision=6), out / "adversary.csv")
        written.append(out / "adversary.csv")
    io.write_text(md, out / "summary.md")
    io.write_text(summary_frame(metrics).write_csv(float_precision=6), out / "summary.csv")
    io.write_text(cmp.write_csv(float_precision=6), out / "comparison.csv")
    if ccmp is not None:
        io.write_text(ccmp.write_csv(float_precision=6), out / "controls.csv")
        written.append(out / "controls.csv")
    io.write_json(ranx_report(per_query, ranx_metrics(cmp, cutoffs)), out / RANX_JSON)
    written += [out / "summary.md", out / "summary.csv", out / "comparison.csv", out / RANX_JSON]
    if plots_dir is not None:
        shown_cmp = cmp.filter(~pl.col("method").is_in(list(post)))
        written += _figures(shown_cmp, cutoffs, Path(plots_dir), train_dir, baseline, reference,
                            families)  # fmt: skip
        if frontier_fig is not None:
            save_png(frontier_fig, Path(plots_dir) / "frontier.png")
            written.append(Path(plots_dir) / "frontier.png")
    written += write_variation(
        {m: metrics[m] for m in method_names}, out,
        None if plots_dir is None else Path(plots_dir), per_query, baseline,
        bootstrap_samples, bootstrap_seed,
    )  # fmt: skip
    log.info(
        "report: %d methods vs %r → %s", len(method_names), baseline, ", ".join(map(str, written))
    )
    return written
