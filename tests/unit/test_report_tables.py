"""Summary tables: one row per method in the given order, numeric keys only."""

from __future__ import annotations

from pipeline.report.tables import markdown_table, summary_frame, summary_markdown


def test_summary_frame_keeps_method_order_and_numeric_keys() -> None:
    metrics = {
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


def test_summary_markdown_has_one_section_per_cutoff() -> None:
    df = summary_frame({"m": {"MRR@10": 0.5, "MRR@20": 0.6, "gap-mean": -1.0}})
    md = summary_markdown(df, [10, 20], {"dataset": "x"})
    assert "## Cut-off 10" in md and "## Cut-off 20" in md
    assert "| m | -1.000 |" in md
    assert "dataset: `x`" in md
