"""Variation table and per-bin figure of the report (SPEC §4.5)."""

from __future__ import annotations

import logging
from pathlib import Path

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


def test_figure_has_one_panel_per_method() -> None:
    """Small multiples: each panel draws its method in colour (the only labelled line) over
    the other rows in grey; the first row (bm25) is the dashed reference elsewhere."""
    fig = variation_figure(variation_frame(METRICS))
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["bm25", "equalize"]
    for ax, method in zip(panels, ("bm25", "equalize"), strict=True):
        labelled = [ln for ln in ax.get_lines() if not str(ln.get_label()).startswith("_")]
        assert [ln.get_label() for ln in labelled] == [method]
    own = next(ln for ln in panels[0].get_lines() if ln.get_label() == "bm25")
    assert own.get_ydata().tolist() == pytest.approx([0.6, 0.4, 0.2])  # type: ignore[union-attr]
    dashed = [ln for ln in panels[1].get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 1 and dashed[0].get_ydata().tolist() == pytest.approx([0.6, 0.4, 0.2])  # type: ignore[union-attr]
    assert [t.get_text() for t in panels[0].get_xticklabels()] == ["easy", "medium", "hard"]


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
