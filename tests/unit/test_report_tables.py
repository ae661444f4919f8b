"""Summary tables: one row per method in the given order, numeric keys only."""

from __future__ import annotations

import polars as pl

from pipeline.report.tables import (
    comparison_table,
    markdown_table,
    report_markdown,
    summary_frame,
)


def test_summary_frame_keeps_method_order_and_numeric_keys() -> None:
    metrics: dict[str, dict[str, object]] = {
        "b": {"MRR@10": 0.5, "lexicon": "open", "n_queries": 3},
        "a": {"MRR@10": 0.25, "NFaiRR@10": 0.9},
    }
    df = summary_frame(metrics)
    assert df["method"].to_list() == ["b", "a"]
    assert df.columns == ["method", "MRR@10", "n_queries", "NFaiRR@10"]
    assert df["NFaiRR@10"].to_list() == [None, 0.9]


def test_markdown_table_formats_and_marks_direction() -> None:
    df = summary_frame({"base": {"MRR@10": 0.5, "LIWC@10": 1.23456}})
    text = markdown_table(df, ["MRR@10", "LIWC@10", "absent@10"], digits=2)
    assert text.splitlines() == [
        "| method | MRR@10 ↑ | LIWC@10 ↓ |",
        "|---|---:|---:|",
        "| base | 0.50 | 1.23 |",
    ]


def _cmp() -> pl.DataFrame:
    from pipeline.report.significance import COMPARISON_SCHEMA

    base = dict.fromkeys(COMPARISON_SCHEMA)
    rows = [
        base | {"method": "base", "metric": "MRR@10", "mean": 0.5, "n_seeds": 1},
        base | {"method": "m", "metric": "MRR@10", "mean": 0.6, "std": 0.01, "n_seeds": 3,
                "change_pct": 20.0, "p_adjusted": 0.01, "significant": True},
        base | {"method": "m", "metric": "ARaB-tf-abs@10", "mean": 0.2, "n_seeds": 3,
                "change_pct": -4.321, "p_adjusted": 0.2, "significant": False},
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=COMPARISON_SCHEMA)


def test_comparison_table_absolute_and_change_forms() -> None:
    cols = ["MRR@10", "ARaB-tf-abs@10"]
    assert comparison_table(_cmp(), cols).splitlines() == [
        "| method | MRR@10 ↑ | ARaB-tf-abs@10 ↓ |",
        "|---|---:|---:|",
        "| base | 0.5000 |  |",
        "| m | 0.6000 ± 0.0100† | 0.2000 |",
    ]
    assert comparison_table(_cmp(), cols, change=True, skip=["base"]).splitlines()[2:] == [
        "| m | +20.00%† | -4.32% |"
    ]


def test_report_markdown_has_absolute_and_change_tables_per_cutoff() -> None:
    md = report_markdown(_cmp(), [10], "base", info={"dataset": "x"})
    assert "## Cut-off 10" in md and "### Change vs `base` (%)" in md
    assert "Bonferroni-adjusted for 1 compared method(s)" in md
    assert "mean ± std over its seeds" in md


def test_direction_table_shows_each_share_with_its_intervals() -> None:
    """Male wins against ½ and every direction column against the baseline, † where the
    interval excludes 0; the separator has one cell per column."""
    import numpy as np

    from pipeline.report.significance import compare
    from pipeline.report.tables import direction_table

    rng = np.random.default_rng(0)
    ids = [f"q{i}" for i in range(60)]

    def seeds(share: float) -> dict[int, pl.DataFrame]:
        return {s: pl.DataFrame({"query_id": ids, "gap-male-wins":
                                 (rng.uniform(size=60) < share).astype(float)})
                for s in (1, 2, 3)}  # fmt: skip

    cmp = compare({"base": seeds(0.5), "male": seeds(0.95)}, "base")
    lines = direction_table(cmp, ["base"]).splitlines()
    assert lines[0].count("|") == lines[1].count("|") == 9
    base, male = lines[2].split("|"), lines[3].split("|")
    assert base[5].strip().startswith("+0.") or base[5].strip().startswith("-0.")
    assert not base[5].strip().endswith("†") and base[6].strip() == ""
    assert male[5].strip().endswith("]†") and male[6].strip().endswith("]†")
