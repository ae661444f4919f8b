"""Summary tables: † only where it means something, the bootstrap CI beside each % change."""

from __future__ import annotations

import polars as pl

from pipeline.report.significance import COMPARISON_SCHEMA
from pipeline.report.tables import comparison_table, marks_significance, report_markdown


def _cmp() -> pl.DataFrame:
    base = dict.fromkeys(COMPARISON_SCHEMA)
    sig = {"significant": True, "p_adjusted": 0.001, "n_seeds": 1}
    rows = [
        base | {"method": "base", "metric": "ARaB-tf@10", "mean": -0.16, "n_seeds": 1},
        base | {"method": "base", "metric": "ARaB-tf-abs@10", "mean": 0.2, "n_seeds": 1},
        base | sig | {"method": "m", "metric": "ARaB-tf@10", "mean": 0.107, "baseline": -0.16,
                      "change_pct": 166.875},
        # the family-wise interval of the difference −0.05 ± 0.02, baseline 0.2: [−35%, −15%]
        # (the narrower unadjusted 95% interval is not the one shown)
        base | sig | {"method": "m", "metric": "ARaB-tf-abs@10", "mean": 0.15, "baseline": 0.2,
                      "change_pct": -25.0, "ci_low": -0.06, "ci_high": -0.04,
                      "ci_adj_low": -0.07, "ci_adj_high": -0.03},
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=COMPARISON_SCHEMA)


def test_dagger_on_magnitudes_not_on_signed_columns() -> None:
    assert not marks_significance("ARaB-tf@10") and not marks_significance("gap-mean")
    assert marks_significance("ARaB-tf-abs@10") and marks_significance("MRR@10")
    assert marks_significance("gap-abs") and marks_significance("NFaiRR@20")
    lines = comparison_table(_cmp(), ["ARaB-tf@10", "ARaB-tf-abs@10"]).splitlines()
    assert lines[-1] == "| m | 0.1070 | 0.1500† |"


def test_change_cell_shows_the_family_wise_interval_in_percent_of_the_baseline() -> None:
    table = comparison_table(_cmp(), ["ARaB-tf-abs@10"], change=True, skip=["base"])
    assert table.splitlines()[-1] == "| m | -25.00%† [-35.0, -15.0] |"


def test_legend_names_the_correction_and_what_the_dagger_means() -> None:
    md = report_markdown(_cmp(), [10], "base", correction="holm")
    assert "Holm-Bonferroni-adjusted for 1 compared method(s)" in md
    assert "† means *different*, not *fairer*" in md
    assert "### Change vs `base` (%) [family-wise 95% interval, % of |base|]" in md
    assert "Bonferroni-adjusted" in report_markdown(_cmp(), [10], "base")


def test_a_metric_saturated_by_the_dataset_carries_no_dagger() -> None:
    from pipeline.data import get_source
    from pipeline.report.tables import unmark_saturated

    cmp = pl.DataFrame(
        {"method": ["m", "m"], "metric": ["AWRF@10", "NFaiRR@10"], "significant": [True, True]}
    )
    shown, note = unmark_saturated(cmp, get_source("grep-biasir").saturated)
    assert shown["significant"].to_list() == [False, True]
    assert note.startswith("AWRF carries no †: every Grep-BiasIR document comes in F, M and N")
    same, none = unmark_saturated(cmp, get_source("msmarco-passage").saturated)
    assert same.equals(cmp) and none == ""
