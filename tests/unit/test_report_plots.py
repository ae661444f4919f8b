"""Report figures: labelled trade-off scatter, training curves, bucket probabilities, sweeps."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from pipeline.report.plots import (
    axis_label,
    bucket_probability_figure,
    param_label,
    save_png,
    sweep_figure,
    tradeoff_figure,
    training_figure,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png(path: Path) -> None:
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert not list(path.parent.glob(".*.tmp"))  # the atomic write left no temporary file


@pytest.mark.parametrize(
    ("metric", "label"),
    [
        ("MRR@10", "MRR@10 ↑"),
        ("NFaiRR@10", "NFaiRR@10 ↑ fairer"),
        ("ARaB-tf-abs@10", "|ARaB-tf|@10 ↓ fairer"),
        ("ARaB-tc@20", "ARaB-tc@20 →0 fairer"),
        ("LIWC@10", "LIWC@10 ↓ fairer"),
        ("n_queries", "n_queries"),
    ],
)
def test_axis_label_names_the_direction(metric: str, label: str) -> None:
    assert axis_label(metric) == label


def test_tradeoff_scatter_labels_every_point(tmp_path: Path) -> None:
    names = ["bm25", "baseline", "penalty_irrelevant", "penalty_relevant", "reward_both"]
    points = pl.DataFrame(
        {
            "method": names,
            "MRR@10": [0.82, 0.69, 0.691, 0.70, 0.68],
            "NFaiRR@10": [0.85, 0.751, 0.752, 0.76, None],  # the null row is left out
        }
    )
    fig = tradeoff_figure(points, "MRR@10", "NFaiRR@10", baseline="baseline", reference=["bm25"])
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.texts) == sorted(names[:4])
    assert ax.get_xlabel() == "MRR@10 ↑" and ax.get_ylabel() == "NFaiRR@10 ↑ fairer"
    renderer = FigureCanvasAgg(fig).get_renderer()
    for t in ax.texts:
        t.update_positions(renderer)  # type: ignore[attr-defined]
    boxes = [Text.get_window_extent(t, renderer) for t in ax.texts]  # text only, no leader
    overlapping = [(i, j) for i in range(4) for j in range(i) if boxes[i].overlaps(boxes[j])]
    assert overlapping == []
    save_png(fig, tmp_path / "out" / "tradeoff.png")
    _png(tmp_path / "out" / "tradeoff.png")


def test_training_figure_one_line_per_method(tmp_path: Path) -> None:
    curve = pl.DataFrame({"step": [5, 10, 15], "loss": [1.0, 0.8, 0.7], "lr": [1e-5, 2e-5, 1e-5]})
    fig = training_figure({"baseline": curve, "other": curve.with_columns(pl.col("loss") + 0.3)})
    loss_ax = fig.axes[0]
    assert [line.get_label() for line in loss_ax.get_lines()] == ["baseline", "other"]
    save_png(fig, tmp_path / "training.png")
    _png(tmp_path / "training.png")


@pytest.mark.slow
def test_bucket_probability_figure_one_line_per_sigma(tmp_path: Path) -> None:
    psi = [0.0, 0.5, 1.0, 1.5, 2.0]
    rows = []
    for sigma in (0.5, 1.0, 2.0):
        w = [math.exp(-((x - 0.0) ** 2) / (2 * sigma**2)) for x in psi]  # μ = min Ψ (SPEC §6.1)
        rows += [
            {"sigma": sigma, "bucket": i, "psi_mean": x, "probability": wi / sum(w)}
            for i, (x, wi) in enumerate(zip(psi, w, strict=True))
        ]
    fig = bucket_probability_figure(pl.DataFrame(rows))
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels == ["σ = 0.5", "σ = 1", "σ = 2"]
    save_png(fig, tmp_path / "buckets.png")
    _png(tmp_path / "buckets.png")


def test_sweep_figure_numeric_and_categorical_axes(tmp_path: Path) -> None:
    numeric = pl.DataFrame(
        {
            "method": ["a", "a", "b", "b"],
            "x": ["0.1", "1", "0.1", "1"],
            "x_num": [0.1, 1.0, 0.1, 1.0],
        }
    ).with_columns(pl.Series("MRR@10", [0.5, 0.4, 0.6, 0.5]))
    fig = sweep_figure(numeric, ["MRR@10"], "methods.*.lambda", logx=True)
    assert fig.axes[0].get_xscale() == "log"
    assert fig.axes[0].get_xlabel() == "λ (methods.*.lambda)" == param_label("methods.*.lambda")
    save_png(fig, tmp_path / "lambda.png")
    _png(tmp_path / "lambda.png")
    cats = pl.DataFrame(
        {"method": ["a"] * 3, "x": ["all", "10", "5"], "x_num": [None, 10.0, 5.0]},
        schema_overrides={"x_num": pl.Float64},
    ).with_columns(pl.Series("MRR@10", [0.5, 0.4, 0.45]))
    fig = sweep_figure(cats, ["MRR@10"], "curriculum.n_buckets")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["5", "10", "all"]


def test_tradeoff_labels_of_a_tight_cluster_do_not_overlap() -> None:
    """24 points within 0.01 of each other (the default run's cluster): every label stands
    in the column right of the axes, and no two overlap."""
    names = [f"method_{i:02d}" for i in range(24)]
    points = pl.DataFrame(
        {"method": names, "MRR@10": [0.92 + 0.0004 * (i % 5) for i in range(24)],
         "NFaiRR@10": [0.77 + 0.0004 * i for i in range(24)]}
    )
    fig = tradeoff_figure(points, "MRR@10", "NFaiRR@10", baseline="method_00")
    ax = fig.axes[0]
    renderer = FigureCanvasAgg(fig).get_renderer()
    for t in ax.texts:
        t.update_positions(renderer)  # type: ignore[attr-defined]
    boxes = [Text.get_window_extent(t, renderer) for t in ax.texts]
    assert len(boxes) == 24
    assert not [(i, j) for i in range(24) for j in range(i) if boxes[i].overlaps(boxes[j])]
    right = ax.get_window_extent(renderer).x1
    assert all(b.x0 > right for b in boxes)  # outside the data


def test_sweep_figure_with_the_default_methods_draws_the_unswept_ones_as_one_band(
    tmp_path: Path,
) -> None:
    """A λ sweep of one method beside every other method of the default params.yaml: the
    methods with one value (or none) of the parameter become one grey band and the baseline
    one dashed line, whatever their number (15 unswept methods once broke the grey shades)."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    methods = list(yaml.safe_load((root / "params.yaml").read_text())["methods"])
    assert len(methods) > 20
    rows = [("penalty_irrelevant", lam, 0.9 - lam / 10) for lam in (0.05, 0.1, 0.25, 0.5)]
    flat_methods = ["baseline", *methods[-2:]]  # methods without a λ
    single = [m for m in methods if m not in flat_methods and m != "penalty_irrelevant"]
    rows += [(m, 1.0, 0.85 + i / 1000) for i, m in enumerate(single)]  # one λ: not swept
    frame = pl.DataFrame(rows, schema=["method", "x_num", "MRR@10"], orient="row")
    frame = frame.with_columns(pl.col("x_num").map_elements(lambda v: f"{v:g}", pl.Utf8).alias("x"))
    flat = pl.DataFrame({"method": flat_methods, "MRR@10": [0.9, 0.88, 0.87]})
    fig = sweep_figure(frame, ["MRR@10"], "methods.*.lambda", flat=flat, logx=True)
    save_png(fig, tmp_path / "lambda.png")
    _png(tmp_path / "lambda.png")
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == [
        "penalty_irrelevant", "baseline (not swept)"
    ]  # fmt: skip
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == [
        "penalty_irrelevant", "baseline (not swept)",
        f"{len(methods) - 2} other methods, not swept (their range)",
    ]  # fmt: skip
