"""Evaluation scopes (issue 29): each run condensed to each query's judged documents, so the
documents of other queries that fill a short candidate list weigh nothing."""

from __future__ import annotations

import math
import typing
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline import io
from pipeline.metrics import runner
from pipeline.metrics.runner import Shared, condense, judged_scope, scope_metrics
from pipeline.params import EvaluateParams, parse_params

PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"

# query q: its own documents a (ζ 1, relevant), b (ζ 0), c (ζ 1); x, y: other queries' (ζ 1)
DOCS = ["a", "b", "c", "x", "y"]
ZETA = [1.0, 0.0, 1.0, 1.0, 1.0]


def _shared() -> Shared:
    zeros = [0] * 5
    scores = pl.DataFrame({
        "doc_id": DOCS, "tc_f": [0, 2, 0, 0, 0], "tc_m": zeros, "tf_f": [0.0, 1.1, 0, 0, 0],
        "tf_m": [0.0] * 5, "bool_f": [0, 1, 0, 0, 0], "bool_m": zeros,
        "psi_tc": [0.0, 2, 0, 0, 0], "psi_tf": [0.0, 1.1, 0, 0, 0], "psi_bool": [0.0, 1, 0, 0, 0],
        "neutrality": ZETA, "lex_f": [0.0, 0.2, 0, 0, 0], "lex_m": [0.0] * 5, "n_words": [10] * 5,
    })  # fmt: skip
    qrels = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": DOCS[:3], "relevance": [1, 0, 0]})
    cands = pl.DataFrame({"query_id": ["q"] * 5, "doc_id": DOCS, "rank": [1, 2, 3, 4, 5],
                          "score": [3.0, 2, 1, 0, 0], "fold": [0] * 5})  # fmt: skip
    empty = pl.DataFrame(schema={"doc_id": pl.Utf8, "dimension": pl.Utf8, "group": pl.Utf8,
                                 "weight": pl.Float64})  # fmt: skip
    return Shared(qrels, scores, cands, None, empty, None)


def _run(order: list[str]) -> pl.DataFrame:
    n = len(order)
    return pl.DataFrame({"query_id": ["q"] * n, "doc_id": order,
                         "score": [float(n - i) for i in range(n)],
                         "rank": list(range(1, n + 1))})  # fmt: skip


def test_condense_keeps_the_judged_rows_in_order_and_renumbers_their_ranks() -> None:
    run = _run(["x", "b", "y", "a", "c"])
    out = condense(run, _shared().qrels)
    assert out["doc_id"].to_list() == ["b", "a", "c"]
    assert out["rank"].to_list() == [1, 2, 3]
    assert out["score"].to_list() == [4.0, 2.0, 1.0]  # scores (and so ties) kept


def test_nfairr_in_the_judged_scope_is_the_formula_over_the_own_documents() -> None:
    """Ranked b, a, c (x and y, neutral documents of other queries, dropped): FaiRR@10 =
    0/log2(2) + 1/log2(3) + 1/log2(4); the ideal list is a, c, b: 1 + 1/log2(3)."""
    s, p = _shared(), EvaluateParams(cutoffs=[10])
    run = _run(["x", "b", "y", "a", "c"])
    full, _ = runner.evaluate_run(run, s, p)
    scoped_run, scoped = judged_scope(run, s)
    judged, per_query = runner.evaluate_run(scoped_run, scoped, p)
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert judged["NFaiRR@10"] == pytest.approx(expected)
    assert full["NFaiRR@10"] != pytest.approx(expected)  # the other queries' documents count
    assert judged["MRR@10"] == pytest.approx(1 / 2) and full["MRR@10"] == pytest.approx(1 / 4)
    assert per_query["query_id"].to_list() == ["q"]


def test_every_scope_params_offers_has_a_function() -> None:
    hints = typing.get_type_hints(EvaluateParams)
    (choices,) = typing.get_args(hints["scopes"])
    assert set(typing.get_args(choices)) == set(runner.SCOPES)
    with pytest.raises(ValueError, match=r"evaluate\.scopes"):
        parse_params({**yaml.safe_load(PARAMS.read_text()), "evaluate": {"scopes": ["judgd"]}})


def test_scope_metrics_write_their_folder_and_prefix_their_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    s, p = _shared(), EvaluateParams(cutoffs=[10], scopes=["judged"])
    runs = [(1, "seed-1", _run(["x", "b", "y", "a", "c"])), (2, "seed-2", _run(["a", "c", "b"]))]
    out = scope_metrics("m", runs, s, p)
    one = runner.evaluate_run(*judged_scope(runs[0][2], s), p)[0]["NFaiRR@10"]
    assert out["judged.NFaiRR@10"] == pytest.approx((one + 1.0) / 2)  # seed 2: the ideal order
    assert out["std"]["judged.NFaiRR@10"] > 0
    written = io.read_json(tmp_path / "eval" / "m" / "seed-1" / "judged" / "metrics.json")
    assert written["NFaiRR@10"] == pytest.approx(one)
    assert (tmp_path / "eval/m/seed-2/judged/per_query.parquet").is_file()
    assert scope_metrics("m", runs, s, EvaluateParams(cutoffs=[10], scopes=[])) == {}
    merged = runner.merged({"a": 1.0, "std": {"a": 0.1}}, out)
    assert merged["a"] == 1.0 and set(merged["std"]) == {"a", *out["std"]}


def test_the_report_names_the_scope_as_the_evaluate_stage_writes_it() -> None:
    from pipeline.report import scopes

    assert scopes.JUDGED == runner.JUDGED


def test_the_report_compares_the_judged_scope_with_the_baseline(tmp_path: Path) -> None:
    from pipeline import schemas
    from pipeline.report.scopes import judged_markdown, scope_comparison
    from pipeline.report.tidy import read_table, views

    qids = [f"q{i}" for i in range(8)]
    base = [0.5, 0.6, 0.7, 0.8] * 2
    rows = {"bm25": [0.9] * 8, "baseline": base, "fairer": [v + 0.1 for v in base]}
    for method, nfairr in {**rows, "unscoped": base}.items():
        frame = pl.DataFrame({"query_id": qids, "NFaiRR@10": nfairr, "MRR@10": [1.0] * 8})
        table = frame.to_arrow()
        for part in ("", "judged") if method in rows else ("",):  # unscoped: whole lists only
            io.write_table(table, tmp_path / method / part / "per_query.parquet",
                           schemas.keyed_schema("pq", table, "query_id"))  # fmt: skip
    methods = list(rows)
    judged = views(read_table(tmp_path, [*methods, "unscoped"], scopes=("judged",)))["judged"]
    assert scope_comparison(judged, [*methods, "unscoped"], "baseline", ["bm25"], 0.05,
                            "bonferroni") is None  # fmt: skip
    cmp = scope_comparison(judged, methods, "baseline", ["bm25"], 0.05, "bonferroni")
    assert cmp is not None
    fairer = cmp.filter((pl.col("method") == "fairer") & (pl.col("metric") == "NFaiRR@10"))
    assert fairer["mean"][0] == pytest.approx(0.75)
    assert "MRR@10" not in set(cmp["metric"])  # the same in every run: says nothing here
    md = judged_markdown(cmp, "baseline", ["bm25"], [10])
    assert "## Over each query's judged documents (8 queries)" in md
    assert "| fairer |" in md and "is left out" in md
