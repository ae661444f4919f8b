"""The metric suite (SPEC §4.1–4.4: MRR, nDCG, ARaB tc/tf/bool signed and |·|, NFaiRR, LIWC at
@10 and @20) for 1,765 queries × 200 candidates: ``pipeline.metrics.suite.evaluate`` vs the
per-query dict loops of ``benchmarks.naive_metrics``.

Synthetic inputs of MS MARCO dev shape: 200 distinct candidates per query (353k documents),
about one relevant passage per query, doc scores with the shipped value ranges. Both sides
return the same aggregates (checked before timing). Ours is timed after imports; its first
call, which includes ranx's numba compilation, is reported apart as ``ours_first_call_s``.

    python -m benchmarks.bench_metrics [--queries 1765] [--depth 200] [--repeats 3]
"""

from __future__ import annotations

import logging
import math

import numpy as np
import polars as pl

from benchmarks.common import parser, report, setup_logging, timed, write_row
from benchmarks.naive_metrics import naive_suite
from pipeline.metrics import EvalInputs
from pipeline.metrics.suite import evaluate

log = logging.getLogger("benchmarks.metrics")
FAMILIES = ("effectiveness", "arab", "nfairr", "liwc")


def tables(n_queries: int, depth: int, seed: int = 0) -> dict[str, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(n_queries), depth)
    doc = np.arange(n_queries * depth)
    qid = pl.Series([f"q{i}" for i in q])
    did = pl.Series([f"d{i}" for i in doc])
    rank = np.tile(np.arange(1, depth + 1), n_queries)
    candidates = pl.DataFrame({"query_id": qid, "doc_id": did, "rank": rank, "score": -rank * 1.0})
    perm = np.argsort(rng.random((n_queries, depth)), axis=1).ravel() + 1  # the reranker's order
    run = pl.DataFrame({"query_id": qid, "doc_id": did, "rank": perm, "score": -perm * 1.0})
    rel_pos = rng.integers(0, depth, n_queries) + np.arange(n_queries) * depth
    qrels = pl.DataFrame({"query_id": qid[rel_pos], "doc_id": did[rel_pos], "relevance": 1})
    n = len(doc)
    tc_f, tc_m = rng.poisson(0.4, n) * 1.0, rng.poisson(0.6, n) * 1.0
    doc_scores = pl.DataFrame(
        {
            "doc_id": did,
            "tc_f": tc_f,
            "tc_m": tc_m,
            "tf_f": np.log1p(tc_f),
            "tf_m": np.log1p(tc_m),
            "bool_f": (tc_f > 0) * 1.0,
            "bool_m": (tc_m > 0) * 1.0,
            "neutrality": rng.choice([0.0, 0.5, 1.0], n, p=[0.2, 0.2, 0.6]),
            "lex_f": rng.random(n) * 0.05,
            "lex_m": rng.random(n) * 0.05,
        }
    )
    return {"run": run, "qrels": qrels, "doc_scores": doc_scores, "candidates": candidates}


def ours(t: dict[str, pl.DataFrame]) -> dict[str, float]:
    inputs = EvalInputs(
        run=t["run"], qrels=t["qrels"], doc_scores=t["doc_scores"], candidates=t["candidates"]
    )
    return evaluate(inputs, metrics=FAMILIES, cutoffs=(10, 20))[0]


def naive(t: dict[str, pl.DataFrame]) -> dict[str, float]:
    scores = {row.pop("doc_id"): row for row in t["doc_scores"].to_dicts()}
    return naive_suite(
        t["run"].select("query_id", "doc_id", "rank").iter_rows(),
        t["qrels"].iter_rows(),
        scores,
        t["candidates"].select("query_id", "doc_id", "rank").iter_rows(),
        (10, 20),
    )


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--queries", type=int, default=1765)
    p.add_argument("--depth", type=int, default=200)
    args = p.parse_args()
    setup_logging()
    logging.getLogger("pipeline").setLevel(logging.WARNING)
    t = tables(args.queries, args.depth)
    first, ours_result = timed(lambda: ours(t))
    naive_result = naive(t)
    for name, value in naive_result.items():
        if not math.isclose(ours_result[name], value, rel_tol=1e-9, abs_tol=1e-12):
            raise AssertionError(f"{name}: ours {ours_result[name]} != naive {value}")
    ours_s = [timed(lambda: ours(t))[0] for _ in range(args.repeats)]
    naive_s = [timed(lambda: naive(t))[0] for _ in range(args.repeats)]
    row = report("metrics", "s", ours_s, naive_s, higher=False)
    row |= {
        "queries": args.queries,
        "depth": args.depth,
        "metrics": len(naive_result),
        "ours_first_call_s": first,
        "ours_s": ours_s,
        "naive_s": naive_s,
    }
    write_row("metrics", row, args.out)


if __name__ == "__main__":
    main()
