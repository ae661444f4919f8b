"""The pipeline's TREC files are read as they are by the tools IR users have (ir_measures,
ranx, pytrec_eval = trec_eval's code), give the suite's MRR/nDCG, and fair-eval reads what
those tools write. One tie convention for effectiveness: trec_eval's (score descending, then
doc id descending), stated in docs/decisions.md, "Ties in effectiveness metrics"."""

from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import numpy as np
import polars as pl
import pytest
import pytrec_eval
import ranx

from pipeline import io
from pipeline.data.grep_biasir import load_grep_biasir
from pipeline.evaluate_run import main as fair_eval
from pipeline.evaluate_run import read_qrels
from pipeline.metrics.effectiveness import ranx_per_query
from pipeline.retrieval.bm25 import bm25_topk
from pipeline.ties import trec_eval_order

CUT = 10


@pytest.fixture(scope="module")
def grep() -> dict[str, pl.DataFrame]:
    g = load_grep_biasir()
    tied = bm25_topk(g.corpus, g.queries, k=50)
    # An untied run: BM25 scores plus a distinct jitter per row, below the scores' spacing.
    jitter = np.random.default_rng(0).permutation(tied.height) * 1e-7
    untied = tied.with_columns((pl.col("score") + pl.Series(jitter)).alias("score"))
    untied = untied.sort(["query_id", "score"], descending=[False, True]).with_columns(
        pl.int_range(1, pl.len() + 1).over("query_id").alias("rank")
    )
    return {"corpus": g.corpus, "qrels": g.qrels, "tied": tied, "untied": untied}


def _files(tmp: Path, grep: dict[str, pl.DataFrame], run: str) -> tuple[Path, Path]:
    run_path, qrels_path = tmp / "run.trec", tmp / "qrels.trec"
    io.write_trec_run(grep[run], run_path, tag=run, metadata={"tag": run})
    io.write_trec_qrels(grep["qrels"], qrels_path)
    return run_path, qrels_path


def _suite(run: pl.DataFrame, qrels: pl.DataFrame) -> dict[str, float]:
    """The suite's mean MRR@10 and nDCG@10 over the run's queries (0 without relevant)."""
    per = ranx_per_query(run, qrels, [f"mrr@{CUT}", f"ndcg@{CUT}"])
    n = run["query_id"].n_unique()
    return {"RR": float(per[f"mrr@{CUT}"].sum()) / n, "nDCG": float(per[f"ndcg@{CUT}"].sum()) / n}


def _ir_measures(run_path: Path, qrels_path: Path) -> dict[str, float]:
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    run = list(ir_measures.read_trec_run(str(run_path)))
    out = ir_measures.calc_aggregate([ir_measures.RR @ CUT, ir_measures.nDCG @ CUT], qrels, run)
    return {"RR": out[ir_measures.RR @ CUT], "nDCG": out[ir_measures.nDCG @ CUT]}


def _pytrec_eval(run_path: Path, qrels_path: Path) -> dict[str, float]:
    with qrels_path.open() as f:
        qrels = pytrec_eval.parse_qrel(f)
    with run_path.open() as f:
        run = pytrec_eval.parse_run(f)
    ndcg = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{CUT}"}).evaluate(run)
    # trec_eval's recip_rank has no cut-off: cut the run at 10 in trec_eval's own order.
    top = {
        q: dict(sorted(docs.items(), key=lambda d: (d[1], d[0]), reverse=True)[:CUT])
        for q, docs in run.items()
    }
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top)
    n = len(run)  # every run query has a qrel here
    return {
        "RR": sum(v["recip_rank"] for v in rr.values()) / n,
        "nDCG": sum(v[f"ndcg_cut_{CUT}"] for v in ndcg.values()) / n,
    }


def _ranx(run_path: Path, qrels_path: Path) -> dict[str, float]:
    qrels = ranx.Qrels.from_file(str(qrels_path), kind="trec")
    run = ranx.Run.from_file(str(run_path), kind="trec")
    out = ranx.evaluate(qrels, run, [f"mrr@{CUT}", f"ndcg@{CUT}"])
    return {"RR": float(out[f"mrr@{CUT}"]), "nDCG": float(out[f"ndcg@{CUT}"])}


def test_run_and_qrels_files_are_plain_trec(tmp_path: Path, grep: dict) -> None:
    run_path, qrels_path = _files(tmp_path, grep, "tied")
    for path, width in ((run_path, 6), (qrels_path, 4)):
        lines = path.read_text().splitlines()
        assert lines and all(len(x.split(" ")) == width for x in lines), path
        assert not any(x.startswith("#") for x in lines)
    # the ir_metadata lives beside the run
    assert io.metadata_path(run_path).name == "run.trec.ir_metadata.yaml"
    assert io.metadata_path(run_path).is_file()
    # every tool reads both files unchanged
    assert sum(1 for _ in ir_measures.read_trec_run(str(run_path))) == grep["tied"].height
    ranx_run = ranx.Run.from_file(str(run_path), kind="trec")
    assert set(ranx_run.keys()) == set(grep["tied"]["query_id"].unique())
    with run_path.open() as f:
        assert sum(len(v) for v in pytrec_eval.parse_run(f).values()) == grep["tied"].height
    assert ranx.Qrels.from_file(str(qrels_path), kind="trec").size == grep["qrels"][
        "query_id"
    ].n_unique()
    assert read_qrels(qrels_path).sort(["query_id", "doc_id"]).equals(
        grep["qrels"].select("query_id", "doc_id", "relevance").sort(["query_id", "doc_id"])
    )


def test_scores_read_back_exactly(tmp_path: Path, grep: dict) -> None:
    """The run file keeps every score (float32 values as their shortest text), so it has the
    ties of the run it was written from, no more, no fewer."""
    run_path, _ = _files(tmp_path, grep, "untied")
    back = io.read_trec_run(run_path).sort(["query_id", "doc_id"])
    mine = grep["untied"].sort(["query_id", "doc_id"])
    assert back["score"].equals(mine["score"])
    run32 = grep["tied"].with_columns(pl.col("score").cast(pl.Float32).cast(pl.Float64))
    io.write_trec_run(run32, tmp_path / "r32.trec", tag="x")
    back32 = io.read_trec_run(tmp_path / "r32.trec").sort(["query_id", "doc_id"])
    assert back32["score"].cast(pl.Float32).equals(
        run32.sort(["query_id", "doc_id"])["score"].cast(pl.Float32)
    )


def _ascending_ties(run: pl.DataFrame) -> pl.DataFrame:
    """The MS MARCO eval script's order (ir_measures' `msmarco` provider of `RR@k`): score
    descending, then doc id ascending."""
    ordered = run.sort(["query_id", "score", "doc_id"], descending=[False, True, False])
    ranks = pl.int_range(1, pl.len() + 1).over("query_id")
    # strictly decreasing scores, so trec_eval_order keeps this order
    return ordered.with_columns((-ranks).cast(pl.Float64).alias("score"), ranks.alias("rank"))


@pytest.mark.parametrize("run", ["untied", "tied"])
def test_every_tool_gives_the_suites_effectiveness(tmp_path: Path, grep: dict, run: str) -> None:
    """On an untied run every tool gives the suite's values. On a tied one pytrec_eval and
    ir_measures' nDCG@k (trec_eval's code and order) still do; ir_measures' RR@k (its
    `msmarco` provider: ties by doc id ascending) and ranx (an unstable quicksort) differ only
    through their tie order: given the run in their order with distinct scores, they agree."""
    run_path, qrels_path = _files(tmp_path, grep, run)
    read = io.read_trec_run(run_path)
    suite = _suite(read, grep["qrels"])
    assert _pytrec_eval(run_path, qrels_path) == pytest.approx(suite, rel=1e-12, abs=1e-12)
    ir_m, rx = _ir_measures(run_path, qrels_path), _ranx(run_path, qrels_path)
    assert ir_m["nDCG"] == pytest.approx(suite["nDCG"], rel=1e-12, abs=1e-12)
    if run == "untied":
        assert ir_m["RR"] == pytest.approx(suite["RR"], rel=1e-12, abs=1e-12)
        assert rx == pytest.approx(suite, rel=1e-12, abs=1e-12)
        return
    # The shipped BM25 run ties every F/M pair: RR@10 0.6998 here (trec_eval), 0.6989 in
    # ir_measures; the suite in ir_measures' order gives ir_measures' value.
    assert ir_m["RR"] == pytest.approx(0.6989, abs=5e-5)
    assert suite["RR"] == pytest.approx(0.6998, abs=5e-5)
    assert _suite(_ascending_ties(read), grep["qrels"])["RR"] == pytest.approx(ir_m["RR"], 1e-12)
    # ranx's order of ties is its sort's: on this run it happens to give trec_eval's values
    # (0.6998); given the run in trec_eval's order with distinct scores, it always does.
    assert rx == pytest.approx(suite, rel=1e-12, abs=1e-12)
    ordered = trec_eval_order(read)
    ordered = ordered.with_columns((-pl.col("rank")).cast(pl.Float64).alias("score"))
    io.write_trec_run(ordered, tmp_path / "broken.trec", tag="x")
    assert _ranx(tmp_path / "broken.trec", qrels_path) == pytest.approx(
        suite, rel=1e-12, abs=1e-12
    )


def test_a_tie_each_tool_breaks_its_own_way(tmp_path: Path) -> None:
    """Two tied documents, the relevant `a` first in the file: trec_eval (and the suite,
    pytrec_eval, ir_measures' nDCG) rank `b` first (doc id descending), ir_measures' RR@k
    ranks `a` first (ascending), ranx keeps the file order here (its sort is not stable in
    general)."""
    run_path, qrels_path = tmp_path / "run.trec", tmp_path / "qrels.trec"
    run_path.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 1.0 t\n")
    qrels_path.write_text("q1 0 a 1\nq1 0 b 0\nq1 0 c 0\n")
    qrels = read_qrels(qrels_path)
    assert _suite(io.read_trec_run(run_path), qrels)["RR"] == 0.5
    assert _pytrec_eval(run_path, qrels_path)["RR"] == 0.5
    assert _ir_measures(run_path, qrels_path)["RR"] == 1.0
    assert _ranx(run_path, qrels_path)["RR"] == 1.0


def test_ties_do_not_depend_on_file_order(grep: dict) -> None:
    tied = grep["tied"]
    reversed_ties = tied.sort(["query_id", "score", "doc_id"], descending=[False, True, False])
    reversed_ties = reversed_ties.with_columns(
        pl.int_range(1, pl.len() + 1).over("query_id").alias("rank")
    )
    assert not reversed_ties.equals(tied.sort(["query_id", "rank"]))
    assert _suite(tied, grep["qrels"]) == _suite(reversed_ties, grep["qrels"])


def test_fair_eval_reads_what_the_tools_write(tmp_path: Path, grep: dict) -> None:
    """ranx writes a run and qrels (`Run.save`, `Qrels.save`); a tab-separated run is read
    too; fair-eval gives the tools' values on them."""
    run_path, qrels_path = _files(tmp_path, grep, "untied")
    want = _ir_measures(run_path, qrels_path)
    ranx.Run.from_file(str(run_path), kind="trec").save(str(tmp_path / "ranx.trec"), kind="trec")
    ranx.Qrels.from_file(str(qrels_path), kind="trec").save(
        str(tmp_path / "ranx.qrels"), kind="trec"
    )
    tabbed = tmp_path / "tabs.trec"
    tabbed.write_text(run_path.read_text().replace(" ", "\t"))
    corpus = tmp_path / "corpus.parquet"
    grep["corpus"].select("doc_id", "text", "group").write_parquet(corpus)
    for run_file, qrels_file in (
        (tmp_path / "ranx.trec", tmp_path / "ranx.qrels"),
        (tabbed, qrels_path),
    ):
        out = tmp_path / f"{run_file.stem}.json"
        fair_eval(
            [str(run_file), "--qrels", str(qrels_file), "--corpus", str(corpus), "--out", str(out)]
        )
        got = json.loads(out.read_text())
        assert got[f"MRR@{CUT}"] == pytest.approx(want["RR"], rel=1e-12)
        assert got[f"nDCG@{CUT}"] == pytest.approx(want["nDCG"], rel=1e-12)


def test_tab_and_space_separated_runs_read_alike(tmp_path: Path) -> None:
    spaced = tmp_path / "a.trec"
    spaced.write_text("q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\n")
    tabbed = tmp_path / "b.trec"
    tabbed.write_text("q1\tQ0\td1\t1\t2.5\tt\n\nq1  Q0\t d2 2 1.5\tt  \n")
    assert io.read_trec_run(spaced).equals(io.read_trec_run(tabbed))
