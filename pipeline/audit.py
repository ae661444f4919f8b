"""Audit against published numbers: the EDBT 2022 runs (Seyedsalehi et al., "Bias-aware fair
neural ranking for addressing stereotypical gender biases", 215 MS MARCO dev queries; 5
cross-encoders × original / bias-aware loss) shipped in `resources/runs/edbt2022/`, and
their Table 2 values (`resources/published/edbt2022_table2.csv`, transcribed from the
repository's README / Table2.png).

`audit_edbt2022` recomputes MRR@10/20, ARaB-tf/bool@10/20 (signed, male − female) and
LIWC@10/20 of every run through `pipeline.metrics` (families `effectiveness`, `arab`, `liwc`)
once the MS MARCO dev qrels and the per-document scores of the runs' passages are present,
and returns one row per (run, metric): `published`, `ours`, `diff = ours − published` and a
`status`. Without them every row is `skipped: <reason>`; with some ranked passages lacking
scores the rows say `partial: …` (those passages count as unbiased, SPEC §4.2/§4.4).
Expected differences even with the real data: LIWC uses the open gender lexicon unless
`score.liwc_dic` points at the proprietary LIWC2015 dictionary the paper used (the
`lexicon` column says which), and the paper's ARaB tokenisation may differ from
`score.tokenizer`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pipeline import io
from pipeline.metrics import EvalInputs
from pipeline.metrics.suite import evaluate

log = logging.getLogger(__name__)

RESOURCES = Path(__file__).resolve().parent / "resources"
RUNS_DIR = RESOURCES / "runs" / "edbt2022"
PUBLISHED = RESOURCES / "published" / "edbt2022_table2.csv"
FAMILIES = ("effectiveness", "arab", "liwc")
CUTOFFS = (10, 20)
COLUMNS = {
    "run": pl.Utf8,
    "model": pl.Utf8,
    "loss": pl.Utf8,
    "metric": pl.Utf8,
    "published": pl.Float64,
    "ours": pl.Float64,
    "diff": pl.Float64,
    "status": pl.Utf8,
    "lexicon": pl.Utf8,
}


def load_published(path: str | Path = PUBLISHED) -> pl.DataFrame:
    """`run, model, loss, metric, published` (one row per run and metric)."""
    expected = ["run", "model", "loss", "metric", "published"]
    try:
        table = pl.read_csv(path, schema_overrides={"published": pl.Float64})
    except (OSError, pl.exceptions.PolarsError) as e:
        raise io.ArtifactError(f"{path}: unreadable published-values CSV ({e})") from e
    if table.columns != expected:
        raise io.ArtifactError(
            f"{path}: columns {table.columns}, expected {expected}; restore it from git"
        )
    return table


def load_runs(names: Sequence[str], root: Path = RUNS_DIR) -> dict[str, pl.DataFrame]:
    """The shipped runs `<root>/<name>.trec.gz` (query_id, doc_id, score, rank)."""
    return {name: io.read_trec_run(root / f"{name}.trec.gz") for name in names}


def recompute(run: pl.DataFrame, qrels: pl.DataFrame, doc_scores: pl.DataFrame) -> dict[str, float]:
    """The audited metrics of one run (aggregates over the run's queries)."""
    qrels = qrels.join(run.select("query_id").unique(), on="query_id", how="semi")
    aggregates, _ = evaluate(EvalInputs(run, qrels, doc_scores), FAMILIES, CUTOFFS)
    return aggregates


def _skip_reason(
    run: pl.DataFrame, qrels: pl.DataFrame | None, doc_scores: pl.DataFrame | None
) -> str | None:
    queries = run["query_id"].unique()
    if qrels is None or not qrels.filter(pl.col("query_id").is_in(queries.implode())).height:
        return "skipped: no MS MARCO dev qrels (extract with dataset.name = msmarco-passage)"
    if doc_scores is None:
        return "skipped: no per-document scores (run the score stage on the MS MARCO corpus)"
    judged = qrels.filter(pl.col("relevance") > 0, pl.col("query_id").is_in(queries.implode()))
    if judged.height == 0:
        return f"skipped: the qrels judge none of the run's {queries.len()} queries"
    docs = run.select("doc_id").unique()
    if docs.join(doc_scores.select("doc_id"), on="doc_id", how="semi").height == 0:
        return f"skipped: no text for any of the run's {docs.height} passages"
    return None


def _status(run: pl.DataFrame, doc_scores: pl.DataFrame) -> str:
    docs = run.select("doc_id").unique()
    missing = docs.join(doc_scores.select("doc_id"), on="doc_id", how="anti").height
    return "ok" if missing == 0 else f"partial: {missing} of {docs.height} passages lack text"


def audit_edbt2022(
    qrels: pl.DataFrame | None,
    doc_scores: pl.DataFrame | None,
    published: pl.DataFrame | None = None,
    runs: dict[str, pl.DataFrame] | None = None,
    queries: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Ours vs published for every run in `published` (default: the shipped CSV and runs).

    `queries` restricts the runs to those query ids (tests, partial data); `qrels` and
    `doc_scores` None (or covering nothing) give `skipped: <reason>` rows.
    """
    table = load_published() if published is None else published
    names = table["run"].unique(maintain_order=True).to_list()
    runs = load_runs(names) if runs is None else runs
    parts = []
    for name in names:
        run = runs[name]
        if queries is not None:
            run = run.filter(pl.col("query_id").is_in(list(queries)))
        rows = table.filter(pl.col("run") == name)
        reason = _skip_reason(run, qrels, doc_scores)
        if reason is not None:
            parts.append(rows.with_columns(ours=pl.lit(None, pl.Float64), status=pl.lit(reason)))
            continue
        assert qrels is not None and doc_scores is not None
        values = recompute(run, qrels, doc_scores)
        ours = pl.Series("ours", [values.get(m) for m in rows["metric"]], dtype=pl.Float64)
        parts.append(rows.with_columns(ours, status=pl.lit(_status(run, doc_scores))))
    out = pl.concat(parts).with_columns(
        diff=pl.col("ours") - pl.col("published"),
        # the lexicon a recomputed row used; none for a skipped one
        lexicon=pl.when(pl.col("status").str.starts_with("skipped"))
        .then(pl.lit(""))
        .otherwise(pl.lit(_lexicon(doc_scores))),
    )
    _log_summary(out)
    return out.select(list(COLUMNS)).cast(COLUMNS)  # type: ignore[arg-type]


def _lexicon(doc_scores: pl.DataFrame | None) -> str:
    if doc_scores is None or doc_scores.height == 0 or "lexicon" not in doc_scores.columns:
        return ""
    return str(doc_scores["lexicon"][0])


def _log_summary(out: pl.DataFrame) -> None:
    done = out.filter(pl.col("ours").is_not_null())
    if done.height == 0:
        log.warning("audit: nothing recomputed; %s", out["status"][0])
        return
    worst = (
        done.with_columns(pl.col("diff").abs().alias("_a"))
        .sort("_a", descending=True)
        .row(0, named=True)
    )
    log.info(
        "audit: %d of %d values recomputed; largest |diff| %.4f (%s %s)",
        done.height, out.height, worst["_a"], worst["run"], worst["metric"],
    )  # fmt: skip


def audit_markdown(table: pl.DataFrame) -> str:
    """A Markdown table: run, metric, published, ours, diff, status."""
    lines = ["| run | metric | published | ours | diff | status |", "|---|---|---:|---:|---:|---|"]
    for r in table.iter_rows(named=True):
        ours = "" if r["ours"] is None else f"{r['ours']:.3f}"
        diff = "" if r["diff"] is None else f"{r['diff']:+.3f}"
        cells = [r["model"], r["metric"], f"{r['published']:.3f}", ours, diff, r["status"]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
