"""Variation table and per-bin figure of the report (SPEC §4.5)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.report.variation import (
    variation_figure,
    variation_frame,
    variation_keys,
    variation_markdown,
    write_variation,
)

P = "var.nDCG@10"
METRICS: dict[str, dict[str, object]] = {
    "bm25": {
        "MRR@10": 0.5,
        f"{P}.mean": 0.4,
        f"{P}.std": 0.2,
        f"{P}.cv": 0.5,
        f"{P}.easy.mean": 0.6,
        f"{P}.medium.mean": 0.4,
        f"{P}.hard.mean": 0.2,
        f"{P}.bin_spread": 0.4,
        "lexicon": "default",
    },
    "equalize": {
        f"{P}.mean": 0.45,
        f"{P}.easy.mean": 0.5,
        f"{P}.medium.mean": 0.45,
        f"{P}.hard.mean": 0.4,
        f"{P}.bin_spread": 0.1,
    },
}


def test_frame_and_markdown() -> None:
    frame = variation_frame(METRICS)
    assert frame["method"].to_list() == ["bm25", "equalize"]
    assert "MRR@10" not in frame.columns
    assert frame.columns[1:] == [k for k in variation_keys() if k in frame.columns]
    assert frame[f"{P}.bin_spread"].to_list() == [0.4, 0.1]
    assert frame[f"{P}.std"].to_list() == [0.2, None]
    md = variation_markdown(frame)
    assert "| method | mean | std | cv | easy.mean | medium.mean | hard.mean | bin_spread |" in md
    assert "| bm25 | 0.400 | 0.200 | 0.500 | 0.600 | 0.400 | 0.200 | 0.400 |" in md
    assert "| equalize | 0.450 |  |  | 0.500 | 0.450 | 0.400 | 0.100 |" in md


def test_figure_shows_the_bins_of_a_few_rows_and_every_method_s_change_with_its_interval(
) -> None:
    """Issue 41: one panel of the bins for the rows shown (not one panel per method) and a
    forest of each method's Δ c_v with its interval, sorted, beside a zero line."""
    frame = variation_frame(METRICS)
    intervals = pl.DataFrame({"method": ["bm25", "equalize", "other"],
                              "d_cv": [0.0, -0.2, 0.1], "d_cv_low": [0.0, -0.3, 0.0],
                              "d_cv_high": [0.0, -0.1, 0.2]})  # fmt: skip
    fig = variation_figure(frame, intervals, ["bm25", "equalize"])
    bins, forest = fig.axes[:2]
    assert [ln.get_label() for ln in bins.get_lines()] == ["bm25", "equalize"]
    assert bins.get_lines()[0].get_ydata().tolist() == pytest.approx([0.6, 0.4, 0.2])  # type: ignore[union-attr]
    assert [t.get_text() for t in bins.get_xticklabels()] == ["easy", "medium", "hard"]
    assert [t.get_text() for t in forest.get_yticklabels()] == ["other"]  # the rows not shown
    zero = [ln for ln in forest.get_lines() if ln.get_linestyle() == "--"]
    assert len(zero) == 1 and list(zero[0].get_xdata()) == [0.0, 0.0]  # type: ignore[arg-type]
    assert len(variation_figure(frame).axes) == 1  # no intervals: the bins alone


def test_write_variation(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    written = write_variation(METRICS, tmp_path / "metrics", tmp_path / "plots")
    assert written == [
        tmp_path / "metrics" / "variation.md",
        tmp_path / "plots" / "variation_bins.png",
    ]
    assert (tmp_path / "plots" / "variation_bins.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "bm25" in (tmp_path / "metrics" / "variation.md").read_text()
    with caplog.at_level(logging.WARNING):
        assert write_variation({"x": {"MRR@10": 0.1}}, tmp_path / "m2", tmp_path / "p2") == []
    assert "variation table and figure skipped" in caplog.text


def test_bin_intervals_match_the_point_values_and_pair_the_queries() -> None:
    from pipeline.metrics.variation import summarise
    from pipeline.report.variation import bin_intervals

    rng = np.random.default_rng(0)
    n = 60
    bins = np.repeat([0, 1, 2], n // 3)
    names = ("easy", "medium", "hard")
    flags = {f"var.n_{b}": (bins == i).astype(np.int64) for i, b in enumerate(names)}

    def frame(values: np.ndarray) -> pl.DataFrame:
        return pl.DataFrame({"query_id": [f"q{i}" for i in range(n)], "nDCG@10": values, **flags})

    base = rng.uniform(0.5, 1.0, size=n)
    same = frame(base)
    shifted = frame(np.where(bins == 2, base - 0.2, base))  # hard queries 0.2 worse
    out = bin_intervals({"b": same, "s": shifted, "c": same}, "b", n_resamples=2000)
    rows = {r["method"]: r for r in out.iter_rows(named=True)}
    expected = summarise(same)
    assert rows["b"]["bin_spread"] == pytest.approx(expected["var.nDCG@10.bin_spread"])
    assert rows["b"]["cv"] == pytest.approx(expected["var.nDCG@10.cv"])
    assert rows["b"]["spread_low"] <= rows["b"]["bin_spread"] <= rows["b"]["spread_high"]
    assert rows["c"]["d_spread_low"] == rows["c"]["d_spread_high"] == 0.0  # same queries
    assert rows["s"]["d_spread_low"] > 0  # the hard bin fell: the spread grew, beyond noise
