"""The report stage body on fake evaluations: tables, comparison CSV, figures, DVC template."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from pipeline import io, schemas
from pipeline.report.build import (
    build_report,
    read_curve,
    tradeoff_frame,
)
from pipeline.report.inputs import load_per_query

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / ".dvc" / "plots" / "scatter_labelled.json"
QIDS = [f"q{i}" for i in range(8)]
A = [0.2, 0.4, 0.6, 0.8, 0.2, 0.4, 0.6, 0.8]  # mean 0.5
NOISE = [0.01, -0.01] * 4


def _per_query(mrr: list[float], nfairr: list[float | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": QIDS,
            "MRR@10": mrr,
            "NFaiRR@10": nfairr,
            "ARaB-tf-abs@10": [0.1] * 8,
            "nfairr_skipped": [int(v is None) for v in nfairr],
        },
        schema_overrides={"NFaiRR@10": pl.Float64, "nfairr_skipped": pl.Int64},
    )


def _write(folder: Path, frame: pl.DataFrame) -> None:
    table = frame.to_arrow()
    io.write_table(
        table, folder / "per_query.parquet", schemas.keyed_schema("pq", table, "query_id")
    )
    means = {c: frame[c].mean() for c in frame.columns if frame[c].dtype == pl.Float64}
    io.write_json(
        {"n_queries": frame.height, **means, "tokenizer": "reference"}, folder / "metrics.json"
    )


@pytest.fixture()
def eval_dir(tmp_path: Path) -> Path:
    root = tmp_path / "eval"
    better = [a + 0.1 + e for a, e in zip(A, NOISE, strict=True)]
    _write(root / "bm25", _per_query(better, [0.9] * 8))
    _write(root / "baseline", _per_query(A, [0.5] * 7 + [None]))
    _write(root / "better", _per_query(better, [0.5] * 7 + [None]))
    _write(root / "same", _per_query(A, [0.5] * 7 + [None]))
    for seed, shift in ((1, 0.0), (2, 0.2)):  # aggregates 0.5 and 0.7: 0.6 ± 0.1414
        _write(root / "seeded" / f"seed-{seed}", _per_query([a + shift for a in A], [0.5] * 8))
    (root / "seeded" / "metrics.json").write_text(json.dumps({"MRR@10": 0.6}))
    for m in ("baseline", "better", "same", "seeded"):  # DVCLive's files of two fold models
        for fold, loss in ((0, 1.0), (1, 0.5)):
            run = tmp_path / "dvclive" / m / "plots" / "metrics" / f"fold-{fold}"
            run.mkdir(parents=True)
            (run / "loss.tsv").write_text(f"step\tloss\n5\t{loss}\n10\t0.8\n")
            (run / "lr.tsv").write_text("step\tlr\n5\t0.00001\n10\t0.00002\n")
    return root


@pytest.mark.slow
def test_build_report_writes_tables_and_figures(eval_dir: Path, tmp_path: Path) -> None:
    methods = ["bm25", "baseline", "better", "same", "seeded"]
    written = build_report(
        methods, eval_dir, tmp_path / "metrics", [10], "baseline",
        info={"dataset": "fake"}, plots_dir=tmp_path / "plots" / "report",
        train_dir=tmp_path / "dvclive",
    )  # fmt: skip
    names = sorted(p.name for p in written)
    tables = ["summary.md", "summary.csv", "comparison.csv", "comparison_ranx.json"]
    tables += ["adversary.csv"]  # its header alone: no method trains an adversary
    tables += ["tradeoff.csv"]
    assert names == sorted([*tables, "tradeoff_nfairr.png", "tradeoff_arab.png", "training.png"])
    assert all(p.stat().st_size > 0 for p in written)
    md = (tmp_path / "metrics" / "summary.md").read_text()
    assert "tokenizer: `reference`, dataset: `fake`" in md
    assert "Bonferroni-adjusted for 3 compared method(s)" in md
    # (0.6 − 0.5) / 0.5, significant; the differences 0.1 ± 0.01 in % of 0.5, at the
    # Bonferroni level of 3 comparisons (z 2.39 instead of 1.96: ~22% wider): ⊂ [17, 23]
    better = re.search(r"\| better \| \+20\.00%† \[\+(\d+\.\d), \+(\d+\.\d)\] \|", md)
    assert better is not None
    assert 17.0 <= float(better[1]) < 20.0 < float(better[2]) <= 23.0
    assert "| same | +0.00% [+0.0, +0.0] |" in md  # identical: not marked, zero-width CI
    # +0.1 on average, but the two seeds differ by 0.2: the test over queries × seeds counts
    # the seed noise, so the difference is not significant (a query-only test would say it is)
    assert "| seeded | 0.6000 ± 0.1414 | 0.5000 ± 0.0000 |" in md
    assert "| baseline |" in md.split("### Change")[0] and "| bm25 |" in md.split("### Change")[0]
    change_rows = md.split("### Change")[1].split("##")[0]
    assert "| bm25 |" not in change_rows and "| baseline |" not in change_rows
    cmp = pl.read_csv(tmp_path / "metrics" / "comparison.csv")
    row = cmp.filter((pl.col("method") == "better") & (pl.col("metric") == "NFaiRR@10")).row(
        0, named=True
    )
    assert row["n_queries"] == 7 and row["p"] == 1.0 and row["significant"] is False
    assert row["ci_low"] == row["ci_high"] == 0.0  # identical NFaiRR values: zero-width CI
    ranx = json.loads((tmp_path / "metrics" / "comparison_ranx.json").read_text())
    assert ranx["model_names"] == methods and ranx["stat_test"] == "student"
    assert ranx["metrics"] == ["MRR@10", "ARaB-tf-abs@10", "NFaiRR@10"]
    assert ranx["better"]["win_tie_loss"]["baseline"]["MRR@10"] == {"W": 8, "T": 0, "L": 0}
    summary = pl.read_csv(tmp_path / "metrics" / "summary.csv")
    assert summary["method"].to_list() == methods and "n_queries" in summary.columns
    points = pl.read_csv(tmp_path / "plots" / "report" / "tradeoff.csv")
    assert points.columns == ["method", "MRR@10", "NFaiRR@10", "ARaB-tf-abs@10", "family"]
    assert set(points.filter(pl.col("method") == "bm25")["family"]) == {"reference"}
    assert points["method"].to_list() == methods


def test_load_per_query_reads_seed_folders_and_names_missing_files(eval_dir: Path) -> None:
    seeded = load_per_query(eval_dir, "seeded")
    assert isinstance(seeded, dict) and sorted(seeded) == [1, 2]
    assert isinstance(load_per_query(eval_dir, "baseline"), pl.DataFrame)
    with pytest.raises(io.ArtifactError, match=r"eval/nope/per_query.parquet: file not found"):
        load_per_query(eval_dir, "nope")


def test_tradeoff_frame_fills_missing_metrics_with_null() -> None:
    cmp = pl.DataFrame({"method": ["a", "b"], "metric": ["MRR@10", "MRR@10"], "mean": [0.5, 0.6]})
    frame = tradeoff_frame(cmp, 10)
    assert frame.columns == ["method", "MRR@10", "NFaiRR@10", "ARaB-tf-abs@10"]
    assert frame["NFaiRR@10"].null_count() == 2


def test_dvc_template_colours_by_family_and_labels_the_baseline_and_references() -> None:
    """The HTML trade-off template (.dvc/plots/scatter_labelled.json): filled by DVC with no
    anchor left; points coloured by `family`; text only for the baseline and the reference
    rows (no overlapping labels); axes on the trained methods, a reference outside them
    clamped to the edge and marked as off the axes."""
    from dvc_render.vega import VegaRenderer

    rows = [
        {"method": "baseline", "MRR@10": "0.69", "NFaiRR@10": "0.75", "rev": "workspace",
         "family": "margin"},
        {"method": "penalty_relevant", "MRR@10": "0.70", "NFaiRR@10": "0.78", "rev": "workspace",
         "family": "pairwise"},
        {"method": "bm25", "MRR@10": "0.52", "NFaiRR@10": "0.85", "rev": "workspace",
         "family": "reference"},
    ]  # fmt: skip
    renderer = VegaRenderer(
        rows, "tradeoff", template=str(TEMPLATE), x="MRR@10", y="NFaiRR@10",
        x_label="MRR@10 ↑", y_label="NFaiRR@10 ↑ fairer",
    )  # fmt: skip
    spec = renderer.get_filled_template()
    text = json.dumps(spec, ensure_ascii=False)
    assert "<DVC_METRIC" not in text and "toNumber(datum['MRR@10'])" in text
    assert spec["encoding"]["x"]["field"] == "x_shown"
    assert spec["encoding"]["y"]["title"] == "NFaiRR@10 ↑ fairer"
    points, labels = spec["layer"]
    assert points["encoding"]["color"]["field"] == "family"
    assert labels["encoding"]["text"]["field"] == "label"
    label = next(t["calculate"] for t in spec["transform"] if t.get("as") == "label")
    assert "datum.family == 'reference' || datum.method == 'baseline'" in label
    assert spec["data"]["values"][0]["method"] == "baseline"


def test_read_curve_averages_the_fold_models_dvclive_logs(eval_dir: Path, tmp_path: Path) -> None:
    curve = read_curve(tmp_path / "dvclive" / "baseline")
    assert curve.to_dicts() == [
        {"step": 5, "loss": 0.75, "lr": 0.00001},
        {"step": 10, "loss": 0.8, "lr": 0.00002},
    ]
    with pytest.raises(io.ArtifactError, match=r"no <run>/loss.tsv .*dvc repro"):
        read_curve(tmp_path / "dvclive" / "missing")
