"""Report figures: labelled trade-off scatter, training curves, bucket probabilities, sweeps."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from pipeline.report.family_figures import method_families, tradeoff_figure, training_figure
from pipeline.report.plots import (
    axis_label,
    bucket_probability_figure,
    param_label,
    save_png,
    sweep_figure,
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


ROOT = Path(__file__).resolve().parents[2]


def _default_methods() -> dict[str, dict[str, object]]:
    import yaml

    methods: dict[str, dict[str, object]] = yaml.safe_load((ROOT / "params.yaml").read_text())[
        "methods"
    ]
    return methods


def test_every_default_method_has_a_family_and_controls_sit_with_their_method() -> None:
    fam = method_families(_default_methods())
    assert len(set(fam.values())) <= 6
    for control, method in (("neutral_only_size", "neutral_only"), ("advbert_w10", "advbert"),
                            ("equalizeir_alpha0", "equalizeir"), ("shuffle_mixed", "baseline"),
                            ("curriculum_low_high_nobucket", "curriculum_low_high"),
                            ("pointwise_reward_both", "pointwise_penalty_relevant")):  # fmt: skip
        assert fam[control] == fam[method], control
    assert fam["penalty_relevant"] != fam["pointwise_penalty_relevant"]


def test_tradeoff_small_multiples_legend_each_family_and_keep_references_off_the_axes(
    tmp_path: Path,
) -> None:
    """One panel per family; no text in the data (nothing to overlap), a legend per panel
    with its methods, the baseline and the reference rows; the axes span the trained
    methods, and bm25 far from them is drawn on the edge with its values in the legend."""
    methods = _default_methods()
    fam = method_families(methods)
    names = ["bm25", "zero-shot", *methods]
    mrr = [0.75, 0.906, *(0.88 + 0.001 * i for i in range(len(methods)))]
    fair = [0.68, 0.701, *(0.69 + 0.002 * i for i in range(len(methods)))]
    points = pl.DataFrame({"method": names, "MRR@10": mrr, "NFaiRR@10": fair})
    fig = tradeoff_figure(points, "MRR@10", "NFaiRR@10", baseline="baseline",
                          reference=["bm25", "zero-shot"], families=fam)  # fmt: skip
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == list(
        dict.fromkeys(f for m, f in fam.items() if m != "baseline")
    )
    for ax in panels:
        assert len(ax.texts) == 0
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        members = [m for m, f in fam.items() if f == ax.get_title() and m != "baseline"]
        assert labels[: len(members)] == members and "baseline" in labels
        assert "bm25 (0.750, 0.680; off the axes)" in labels and "zero-shot" in labels
        assert ax.get_xlim()[0] > 0.75 and ax.get_xlabel() == "MRR@10 ↑"
    save_png(fig, tmp_path / "out" / "tradeoff.png")
    _png(tmp_path / "out" / "tradeoff.png")


def test_training_figure_one_panel_per_family_and_a_log_axis_for_a_dwarfing_loss(
    tmp_path: Path,
) -> None:
    curve = pl.DataFrame({"step": [5, 10, 15], "loss": [1.0, 0.8, 0.7], "lr": [1e-5, 2e-5, 1e-5]})
    curves = {"baseline": curve, "other": curve.with_columns(pl.col("loss") + 0.3),
              "adv": curve.with_columns(pl.col("loss") * 10)}  # fmt: skip
    fam = {"baseline": "margin", "other": "margin", "adv": "adversarial"}
    fig = training_figure(curves, {**fam, "other": "adversarial"})
    margin, adversarial, lr = (ax for ax in fig.axes if ax.get_visible())
    assert [line.get_label() for line in margin.get_lines()] == ["baseline"]
    assert [line.get_label() for line in adversarial.get_lines()] == ["other", "adv"]
    assert adversarial.get_yscale() == "log" and margin.get_yscale() == "linear"
    assert [t.get_text() for t in lr.get_legend().get_texts()] == ["baseline, other, adv"]
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


def test_sweep_figure_with_the_default_methods_draws_the_unswept_ones_as_one_band(
    tmp_path: Path,
) -> None:
    """A λ sweep of one method beside every other method of the default params.yaml: the
    methods with one value (or none) of the parameter become one grey band and the baseline
    one dashed line, whatever their number (15 unswept methods once broke the grey shades)."""
    methods = list(_default_methods())
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


def test_tradeoff_points_carry_family_wise_whiskers_and_axes_span_the_mde() -> None:
    """Issue 41: each method's whiskers are baseline + its family-wise interval of the
    difference (by hand below), and the axis spans the baseline ± the largest MDE even when
    every point sits inside it."""
    from pipeline.report.family_figures import Interval, whiskers
    from pipeline.report.significance import COMPARISON_SCHEMA

    base = dict.fromkeys(COMPARISON_SCHEMA)
    rows = [base | {"method": "a", "metric": "MRR@10", "mean": 0.905, "baseline": 0.9,
                    "ci_adj_low": -0.01, "ci_adj_high": 0.02, "mde": 0.05},
            base | {"method": "a", "metric": "NFaiRR@10", "mean": 0.72, "baseline": 0.70,
                    "ci_adj_low": 0.005, "ci_adj_high": 0.035, "mde": 0.01},
            base | {"method": "b", "metric": "MRR@10", "mean": 0.9, "baseline": 0.9,
                    "ci_adj_low": -0.002, "ci_adj_high": 0.002, "mde": 0.03}]  # fmt: skip
    spans, mde = whiskers(pl.DataFrame(rows, schema=COMPARISON_SCHEMA), ["MRR@10", "NFaiRR@10"])
    assert spans["MRR@10"]["a"] == Interval(pytest.approx(0.89), pytest.approx(0.92))
    assert spans["NFaiRR@10"]["a"] == Interval(pytest.approx(0.705), pytest.approx(0.735))
    assert mde == {"MRR@10": 0.05, "NFaiRR@10": 0.01}  # the largest per metric
    points = pl.DataFrame({"method": ["baseline", "a", "b"], "MRR@10": [0.9, 0.905, 0.9],
                           "NFaiRR@10": [0.70, 0.72, 0.701]})  # fmt: skip
    fig = tradeoff_figure(points, "MRR@10", "NFaiRR@10", baseline="baseline",
                          intervals=spans, mde=mde)  # fmt: skip
    ax = next(ax for ax in fig.axes if ax.get_visible())
    lo, hi = ax.get_xlim()
    assert lo < 0.85 and hi > 0.95  # baseline 0.9 ± MDE 0.05, though the points span 0.005
    bars = [line.get_xydata().tolist() for line in ax.get_lines()]
    assert [[pytest.approx(0.89), pytest.approx(0.72)],
            [pytest.approx(0.92), pytest.approx(0.72)]] in bars  # a's MRR whisker
    assert [[pytest.approx(0.905), pytest.approx(0.705)],
            [pytest.approx(0.905), pytest.approx(0.735)]] in bars  # a's NFaiRR whisker
