"""AdvBERT's adversary against the majority class over training (issue 29): the per-model
second-half summary the report writes to metrics/adversary.csv."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline.report.adversary import COLUMNS, adversary_markdown, adversary_table


def _log(root: Path, model: str, values: dict[str, list[float]]) -> None:
    folder = root / "advbert" / "plots" / "metrics" / model
    folder.mkdir(parents=True)
    for name, series in values.items():
        steps = [5 * (i + 1) for i in range(len(series))]
        pl.DataFrame({"step": steps, name: series}).write_csv(folder / f"{name}.tsv",
                                                              separator="\t")  # fmt: skip


def test_second_half_means_per_model(tmp_path: Path) -> None:
    """Steps 5..40: the second half is steps 25..40 (past half of the last step, 20)."""
    _log(tmp_path, "seed-1/fold-0", {
        "adv_acc": [0.1, 0.1, 0.1, 0.1, 0.6, 0.7, 0.8, 0.9],
        "adv_majority": [0.5] * 4 + [0.7] * 4,
        "adv_label_share": [0.5] * 4 + [0.2, 0.2, 0.4, 0.4],
    })  # fmt: skip
    _log(tmp_path, "seed-1/fold-1", {"adv_acc": [0.5, 0.5], "adv_majority": [0.6, 0.8]})
    (tmp_path / "baseline" / "plots" / "metrics" / "fold-0").mkdir(parents=True)  # no adversary
    table = adversary_table(tmp_path, ["baseline", "advbert"])
    assert table.columns == list(COLUMNS) and table.height == 2
    first, second = table.row(0, named=True), table.row(1, named=True)
    assert (first["model"], first["windows"]) == ("seed-1/fold-0", 4)
    assert first["accuracy"] == pytest.approx(0.75) and first["majority"] == pytest.approx(0.7)
    assert first["constant"] == pytest.approx(0.7)  # max(p, 1 - p), p = 0.3
    assert first["acc_minus_majority"] == pytest.approx(0.05)
    assert second["windows"] == 1 and second["constant"] is None  # older logs: no label share
    assert second["acc_minus_majority"] == pytest.approx(-0.3)
    md = adversary_markdown(table)
    assert "| advbert | 2 | 0.50–0.75 | 0.70–0.80 | -0.125 (-0.30–0.05) | 1 of 2 |" in md
    assert adversary_markdown(adversary_table(tmp_path, ["baseline"])) == ""


def test_the_adversary_term_logs_its_label_share() -> None:
    import torch

    from pipeline.train.live import collecting
    from pipeline.train.losses._adversary import AdversaryTerm

    rows: list[dict[str, float]] = []
    with collecting(lambda step, values: rows.append(dict(values))) as sink:
        term = AdversaryTerm(4, seed=0)
        term(torch.randn(4, 4), {"zeta": torch.tensor([1.0, 0.5, 0.0, 0.0])})
        assert sink is not None
        sink(1, {"loss": 0.0})
    assert rows[0]["adv_label_share"] == pytest.approx(0.75)  # 3 of 4 have ζ < 1
    assert rows[0]["adv_majority"] == pytest.approx(0.75)
    assert 0.0 <= rows[0]["adv_acc"] <= 1.0
