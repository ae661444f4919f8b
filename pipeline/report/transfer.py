"""The held-out collection in the report (issue 21): every method's runs of GenderBias-QA,
compared with the baseline by the same test as the main collection, and their section of
`metrics/summary.md`. Per-query frames: `eval/<method>/[seed-<n>/]transfer/per_query.parquet`
(written by the evaluate stage, `pipeline.metrics.runner.transfer_metrics`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from pipeline.metrics import MEASURES
from pipeline.report import tidy
from pipeline.report.claims import DEFAULT_RULE, findings_lines
from pipeline.report.significance import PerQuery, compare
from pipeline.report.tables import change_columns, comparison_table, direction_table
from pipeline.report.verdict_rule import VerdictRule

TRANSFER = "transfer"
TRANSFER_AT_K = tuple(m.key for m in MEASURES if m.transfer and m.per_cutoff)
"""The held-out collection's per-cut-off columns: the measures whose record says
``transfer=True``."""
TRANSFER_OVERALL = tuple(m.key for m in MEASURES if m.transfer and not m.per_cutoff)


def transfer_comparison(
    scoped: Mapping[str, PerQuery], method_names: Sequence[str], baseline: str,
    reference: Sequence[str], alpha: float, correction: str,
) -> pl.DataFrame | None:  # fmt: skip
    """The held-out collection's comparison (same test as the main one) over ``scoped``, its
    view of the report's table (``pipeline.report.tidy.views``), or null when a method was
    not evaluated on it."""
    per_query = tidy.pick(scoped, method_names)
    if per_query is None:
        return None
    return compare(per_query, baseline, reference=reference, alpha=alpha, correction=correction)


def transfer_notes(data_dir: str | Path) -> list[str]:
    """The held-out collection's measured confounds for its section (issue 29): the gender
    words per F/M group of ``<data_dir>/group_words.parquet`` (``transfer_data``)."""
    path = Path(data_dir) / "group_words.parquet"
    if not path.is_file():
        return []
    from pipeline import io, schemas
    from pipeline.bias.group_words import group_words_line

    line = group_words_line(io.read_table(str(path), schemas.GROUP_WORDS))
    if not line:
        return []
    return [f"Confound: {line} Losses that penalise gender words (or reward neutrality) "
            "push the group carrying more of them down by construction."]  # fmt: skip


def transfer_markdown(
    cmp: pl.DataFrame, baseline: str, reference: Sequence[str], cutoffs: Sequence[int],
    notes: Sequence[str] = (), rule: VerdictRule = DEFAULT_RULE,
) -> str:  # fmt: skip
    """The transfer section of summary.md: absolute values and changes at the first cut-off,
    the gap and the direction table, with the number of queries evaluated; ``notes``:
    paragraphs under its heading (``transfer_notes``); ``rule``: the verdicts' rule."""
    k = 10 if 10 in cutoffs else cutoffs[0]
    n = int(cmp.filter(pl.col("method") == baseline)["n_queries"].fill_null(0).max() or 0)  # type: ignore[arg-type]
    skip = [baseline, *reference]
    models = int(cmp["n_models"].drop_nulls().max() or 0)  # type: ignore[arg-type]
    cols = [c.format(k=k) for c in TRANSFER_AT_K]
    change = [c.format(k=k) for c in change_columns(TRANSFER_AT_K)]
    return "\n".join([
        "", f"## Transfer: GenderBias-QA ({n} queries, never trained on)", "",
        "Each seed's fold models (`transfer.fold_models`: `all`, the default, every fold "
        "model, a query's value being their mean; `first`, fold 0's only) rerank every "
        "held-out question's BM25 top-k; "
        "values are means over seeds. Groups: the two female- and two male-leaning answers of "
        "each question (no neutral version, so no neutral-first). Relevance is constructed: "
        "a question's four answers are relevant and every other answer is not, although "
        "some people answer several questions.",
        *(x for note in notes for x in ("", note)),
        "", comparison_table(cmp, [*cols, *TRANSFER_OVERALL]), "",
        f"### Change vs `{baseline}` (%) [family-wise 95% interval, % of |{baseline}|]", "",
        comparison_table(cmp, [*change, *change_columns(TRANSFER_OVERALL)], change=True,
                         skip=skip), "",
        "### Direction", "", direction_table(cmp, skip), "",
        "### Findings (transfer; generated from the intervals, the same rules as above)", "",
        f"The unit of noise is again the trained model: {models} units per method (each "
        "seed's fold-0 model, or with `transfer.fold_models: all` the mean of its fold "
        "models), which leaves few degrees of freedom for the model component and wide "
        "intervals.", "",
        *findings_lines(cmp, baseline, skip, rule), "",
    ])  # fmt: skip
