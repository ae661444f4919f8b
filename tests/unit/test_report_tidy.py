"""The report over one tidy table (issue 44): one report build reads every per-query file of
eval/ exactly once, and its sections are functions of the table (built here without files)."""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline import io, schemas
from pipeline.report import inputs, tidy
from pipeline.report.build import build_report
from pipeline.report.scopes import scope_comparison
from pipeline.report.significance import compare
from pipeline.report.transfer import transfer_comparison

QIDS = [f"q{i}" for i in range(12)]
RNG = np.random.default_rng(7)
SCOPES = ("judged", "transfer")


def _frame(shift: float, fold: bool = False) -> pl.DataFrame:
    nfairr = np.clip(RNG.uniform(0.3, 0.7, len(QIDS)) + shift, 0, 1).tolist()
    nfairr[0] = None  # a query the metric skips
    frame = pl.DataFrame(
        {"query_id": QIDS, "MRR@10": RNG.uniform(0, 1, len(QIDS)), "NFaiRR@10": nfairr,
         "gap-male-wins": RNG.uniform(0, 1, len(QIDS)), "nfairr_skipped": [1] + [0] * 11},
        schema_overrides={"NFaiRR@10": pl.Float64, "nfairr_skipped": pl.Int64},
    )  # fmt: skip
    return frame.with_columns(pl.Series("fold", [i % 2 for i in range(12)])) if fold else frame


def _write(folder: Path, frame: pl.DataFrame) -> None:
    table = frame.to_arrow()
    io.write_table(
        table, folder / "per_query.parquet", schemas.keyed_schema("pq", table, "query_id")
    )
    means = {c: frame[c].mean() for c in frame.columns if frame[c].dtype == pl.Float64}
    io.write_json({"n_queries": frame.height, **means}, folder / "metrics.json")


@pytest.fixture()
def eval_dir(tmp_path: Path) -> Path:
    """bm25 (one run), baseline, fairer and a post entry on the baseline (three seeds), each in
    the whole lists, the judged scope and the held-out collection."""
    root = tmp_path / "eval"
    for method, shift in (("bm25", 0.0), ("baseline", 0.0), ("fairer", 0.2), ("shift_1", 0.1)):
        seeds = [""] if method == "bm25" else ["seed-1", "seed-2", "seed-3"]
        for seed in seeds:
            for part in ("", "judged", "transfer"):
                _write(root / method / seed / part, _frame(shift))
        if method != "bm25":  # the seeds' pooled metrics.json (no per_query.parquet beside it)
            io.write_json({"n_queries": len(QIDS)}, root / method / "metrics.json")
    return root


def test_one_report_build_reads_each_per_query_file_once(
    eval_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: collections.Counter[Path] = collections.Counter()
    read = inputs.read_per_query

    def counting(path: str | Path) -> pl.DataFrame:
        reads[Path(path)] += 1
        return read(path)

    monkeypatch.setattr(inputs, "read_per_query", counting)
    post = {"shift_1": {"processor": "score_shift", "base": "baseline", "lambda": 1.0}}
    build_report(["bm25", "baseline", "fairer", "shift_1"], eval_dir, tmp_path / "out", [10],
                 "baseline", post=post)  # fmt: skip
    files = set(eval_dir.rglob("per_query.parquet"))
    assert set(reads) == files and len(files) == 3 + 3 * 3 * 3  # every file read ...
    assert set(reads.values()) == {1}  # ... once (the post section re-read the baseline's)
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "## Over each query's judged documents" in md and "## Transfer" in md
    assert "## Inference-time methods" in md


def test_the_views_are_the_frames_as_read() -> None:
    """Per-query frames → the long table → the frames again: values, nulls, Int64 counts,
    the fold column, the column and query order, one run or seeds."""
    frames = {"one": _frame(0.0), "seeded": {2: _frame(0.1, fold=True), 1: _frame(0.2, fold=True)}}
    table = tidy.long_table(frames, "judged")
    assert table.schema == pl.Schema(tidy.TIDY)
    assert table.filter(pl.col("metric") == "nfairr_skipped")["count"].all()
    back = tidy.per_query(table, ["seeded", "one"], "judged")
    assert back is not None and list(back) == ["seeded", "one"]
    one, seeded = back["one"], back["seeded"]
    assert isinstance(one, pl.DataFrame) and one.equals(frames["one"])
    assert one.schema == frames["one"].schema
    assert isinstance(seeded, dict) and list(seeded) == [2, 1]  # the order read
    for seed, frame in seeded.items():
        expected = frames["seeded"][seed]  # type: ignore[index]
        assert frame.select(expected.columns).equals(expected)
    assert tidy.per_query(table, ["one"], tidy.ALL) is None  # no whole lists in this table


def test_the_sections_are_functions_of_the_table() -> None:
    """A tidy table written as rows (no file): the main, judged and held-out comparisons and
    the metric directions read from the metric records."""
    rows = [
        (m, s, None, q, scope, "NFaiRR@10", base + (0.2 if m == "fairer" else 0.0) + 0.01 * s)
        for m in ("baseline", "fairer") for s in (1, 2, 3) for scope in (tidy.ALL, *SCOPES)
        for q, base in zip(QIDS, np.linspace(0.2, 0.6, len(QIDS)).tolist(), strict=True)
    ]  # fmt: skip
    table = pl.DataFrame([(*r, False) for r in rows], schema=list(tidy.TIDY.items()), orient="row")
    per_query = tidy.per_query(table, ["baseline", "fairer"])
    assert per_query is not None
    main = compare(per_query, "baseline")
    scoped = tidy.views(table)
    assert list(scoped) == [tidy.ALL, *SCOPES]
    judged = scope_comparison(scoped["judged"], ["baseline", "fairer"], "baseline", [], 0.05,
                              "bonferroni")  # fmt: skip
    moved = transfer_comparison(scoped["transfer"], ["baseline", "fairer"], "baseline", [], 0.05,
                                "bonferroni")  # fmt: skip
    assert judged is not None and moved is not None
    for cmp in (main, judged, moved):
        fairer = cmp.filter(pl.col("method") == "fairer").row(0, named=True)
        assert fairer["diff"] == pytest.approx(0.2) and fairer["n_seeds"] == 3
    assert tidy.directions(table).rows() == [("NFaiRR@10", "↑", 0.0, 1.0)]
