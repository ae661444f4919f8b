"""Audit of the shipped EDBT 2022 runs: recomputation plumbing on a tiny fake corpus."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipeline.audit import (
    RUNS_DIR,
    audit_edbt2022,
    audit_markdown,
    load_published,
    load_runs,
)
from pipeline.bias.lexicon import REPRESENTATIVE_PATH, SPECIFIC_PATH, default_lexicon, load_wordlist
from pipeline.bias.scoring import score_documents

RUN = "inference_bert-mini"
TEXTS = ["he said his father", "she met her mother and her sister", "a neutral passage", "men"]


@pytest.fixture(scope="module")
def tiny() -> dict[str, object]:
    """Two queries of the real run, fake passage texts, and one relevant passage each."""
    run = load_runs([RUN])[RUN]
    q1, q2 = sorted(run["query_id"].unique().to_list())[:2]
    run = run.filter(pl.col("query_id").is_in([q1, q2]))
    docs = run["doc_id"].unique().sort().to_list()
    corpus = pl.DataFrame({"doc_id": docs, "text": [TEXTS[i % 4] for i in range(len(docs))]})
    doc_scores = score_documents(
        corpus, load_wordlist(SPECIFIC_PATH), load_wordlist(REPRESENTATIVE_PATH), default_lexicon()
    )
    rel = [(q1, run.filter(pl.col("query_id") == q1, pl.col("rank") == 3)["doc_id"][0], 1)]
    rel += [(q2, run.filter(pl.col("query_id") == q2, pl.col("rank") == 15)["doc_id"][0], 1)]
    qrels = pl.DataFrame(rel, schema=["query_id", "doc_id", "relevance"], orient="row")
    return {"run": run, "queries": [q1, q2], "doc_scores": doc_scores, "qrels": qrels}


def _tie_avg(weights: list[float], block: list[int]) -> float:
    return sum(weights[j] for j in block) / len(block)


def by_hand(run: pl.DataFrame, scores: pl.DataFrame, k: int) -> dict[str, float]:
    """ARaB-x@k (male − female) and LIWC@k as plain loops over the ranked lists, with
    tie-averaged position weights (SPEC §1: the real run ties some passages' scores)."""
    table = {r["doc_id"]: r for r in scores.iter_rows(named=True)}
    out = {f"ARaB-tf@{k}": 0.0, f"ARaB-bool@{k}": 0.0, f"LIWC@{k}": 0.0}
    queries = run["query_id"].unique().to_list()
    for q in queries:
        rows = run.filter(pl.col("query_id") == q).sort("rank")
        docs, score = rows["doc_id"].to_list(), rows["score"].to_list()
        cut = min(k, len(docs))
        arab_w = [sum(1 / t for t in range(r, cut + 1)) / cut if r <= cut else 0.0
                  for r in range(1, len(docs) + 1)]  # fmt: skip
        mean_w = [1 / cut if r <= cut else 0.0 for r in range(1, len(docs) + 1)]
        blocks = [[i for i in range(len(docs)) if score[i] == s] for s in score]
        for x in ("tf", "bool"):
            diffs = [table[d][f"{x}_m"] - table[d][f"{x}_f"] for d in docs]
            arab = sum(_tie_avg(arab_w, blocks[i]) * diffs[i] for i in range(len(docs)))
            out[f"ARaB-{x}@{k}"] += arab / len(queries)
        lex = [table[d]["lex_f"] - table[d]["lex_m"] for d in docs]
        liwc = abs(sum(_tie_avg(mean_w, blocks[i]) * lex[i] for i in range(len(docs))))
        out[f"LIWC@{k}"] += liwc * 100 / len(queries)
    return out


def test_published_values_cover_the_ten_shipped_runs() -> None:
    table = load_published()
    assert table.height == 80
    assert sorted(f"{r}.trec.gz" for r in table["run"].unique()) == sorted(
        p.name for p in RUNS_DIR.glob("*.trec.gz")
    )
    row = table.filter(pl.col("run") == "inference_albert", pl.col("metric") == "MRR@10")
    assert row["published"][0] == pytest.approx(0.227)


def test_recomputes_through_the_metrics_package(tiny: dict) -> None:
    published = load_published().filter(pl.col("run") == RUN)
    out = audit_edbt2022(
        tiny["qrels"], tiny["doc_scores"], published, {RUN: tiny["run"]}, tiny["queries"]
    )
    assert out["status"].unique().to_list() == ["ok"]
    assert out["lexicon"][0] == "open:wordlist_genderspecific"
    ours = dict(zip(out["metric"], out["ours"], strict=True))
    assert ours["MRR@10"] == pytest.approx((1 / 3 + 0) / 2)
    assert ours["MRR@20"] == pytest.approx((1 / 3 + 1 / 15) / 2)
    for k in (10, 20):
        for key, value in by_hand(tiny["run"], tiny["doc_scores"], k).items():
            assert ours[key] == pytest.approx(value), key
    assert out["diff"].to_list() == pytest.approx((out["ours"] - out["published"]).to_list())
    assert "| BERT-mini | MRR@10 | 0.203 |" in audit_markdown(out)


def test_partial_text_is_reported(tiny: dict) -> None:
    scores = tiny["doc_scores"].slice(1)
    published = load_published().filter(pl.col("run") == RUN)
    out = audit_edbt2022(tiny["qrels"], scores, published, {RUN: tiny["run"]}, tiny["queries"])
    n_docs = tiny["run"]["doc_id"].n_unique()
    assert out["status"][0] == f"partial: 1 of {n_docs} passages lack text"
    assert all(math.isfinite(v) for v in out["ours"].to_list())


def test_without_msmarco_data_every_row_is_skipped_with_a_reason(tiny: dict) -> None:
    out = audit_edbt2022(None, None)  # the shipped CSV and all ten runs
    assert out.height == 80 and out["ours"].null_count() == 80
    assert out["status"].unique().to_list() == [
        "skipped: no MS MARCO dev qrels (extract with dataset.name = msmarco-passage)"
    ]
    other = pl.DataFrame({"query_id": ["1"], "doc_id": ["x"], "relevance": [1]})
    published = load_published().filter(pl.col("run") == RUN)
    out = audit_edbt2022(other, tiny["doc_scores"], published, {RUN: tiny["run"]})
    # qrels of another collection (the default's Grep-BiasIR): decided from the data, not
    # from dataset.name; a skipped row used no lexicon
    assert out["status"][0].startswith("skipped: no MS MARCO dev qrels")
    assert out["lexicon"].to_list() == [""] * out.height
    unjudged = tiny["qrels"].with_columns(pl.lit(0).alias("relevance"))
    out = audit_edbt2022(unjudged, tiny["doc_scores"], published, {RUN: tiny["run"]})
    assert out["status"][0] == "skipped: the qrels judge none of the run's 2 queries"
    out = audit_edbt2022(tiny["qrels"], tiny["doc_scores"].head(0), published, {RUN: tiny["run"]})
    assert out["status"][0].startswith("skipped: no text for any of the run's")
    assert "|  |  | skipped" in audit_markdown(out)
