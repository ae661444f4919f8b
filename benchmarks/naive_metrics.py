"""The metric suite of SPEC §4.1–4.4 written the way reference code usually is: per-query
Python dicts and loops. It is the naive side of ``bench_metrics`` and a second, independent
reading of the SPEC (``tests/unit/test_benchmark_references.py`` checks it equals ours).

Returns the same aggregates as ``pipeline.metrics.suite.evaluate`` for the families
``effectiveness, arab, nfairr, liwc`` (means over queries; NFaiRR over non-skipped queries).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

MEASURES = ("tc", "tf", "bool")
Row = tuple[str, str, int]  # query_id, doc_id, rank (or relevance for qrels)


def _ranked(run: Iterable[Row]) -> dict[str, list[str]]:
    by_query: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for query_id, doc_id, rank in run:
        by_query[query_id].append((rank, doc_id))
    return {q: [d for _, d in sorted(rows)] for q, rows in by_query.items()}


def naive_suite(
    run: Iterable[Row],
    qrels: Iterable[Row],
    doc_scores: dict[str, dict[str, float]],
    candidates: Iterable[Row],
    cutoffs: Sequence[int] = (10, 20),
) -> dict[str, float]:
    """Aggregates ``MRR@k, nDCG@k, ARaB-x@k, ARaB-x-abs@k, NFaiRR@k, LIWC@k``."""
    ranked = _ranked(run)
    background = _ranked(candidates)
    judged: dict[str, dict[str, int]] = defaultdict(dict)
    for query_id, doc_id, relevance in qrels:
        judged[query_id][doc_id] = relevance
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for query_id, docs in ranked.items():
        for name, value in _one_query(
            docs, judged[query_id], doc_scores, background.get(query_id, []), cutoffs
        ).items():
            if value is not None:
                sums[name] += value
                counts[name] += 1
    return {name: sums[name] / counts[name] for name in sums}


def _one_query(
    docs: list[str],
    qrels: dict[str, int],
    scores: dict[str, dict[str, float]],
    background: list[str],
    cutoffs: Sequence[int],
) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    zero = {f"{x}_{g}": 0.0 for x in MEASURES for g in "fm"} | {"lex_f": 0.0, "lex_m": 0.0}
    for k in cutoffs:
        top = docs[:k]
        rr = 0.0
        for i, d in enumerate(top):
            if qrels.get(d, 0) > 0:
                rr = 1.0 / (i + 1)
                break
        out[f"MRR@{k}"] = rr
        dcg = sum(qrels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(top))
        ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        out[f"nDCG@{k}"] = dcg / idcg if idcg > 0 else 0.0
        for x in MEASURES:
            cum_f = cum_m = arab_f = arab_m = 0.0
            for t, d in enumerate(top, start=1):
                s = scores.get(d, zero)
                cum_f += s[f"{x}_f"]
                cum_m += s[f"{x}_m"]
                arab_f += cum_f / t
                arab_m += cum_m / t
            n = len(top)
            diff = (arab_m - arab_f) / n if n else 0.0
            out[f"ARaB-{x}@{k}"] = diff
            out[f"ARaB-{x}-abs@{k}"] = abs(diff)
        fairr = sum(
            scores[d]["neutrality"] / math.log2(i + 2) if d in scores else 1.0 / math.log2(i + 2)
            for i, d in enumerate(top)
        )
        zetas = sorted(
            (scores[d]["neutrality"] if d in scores else 1.0 for d in background), reverse=True
        )[:k]
        ifairr = sum(z / math.log2(i + 2) for i, z in enumerate(zetas))
        out[f"NFaiRR@{k}"] = fairr / ifairr if ifairr > 0 else None
        shares = [scores.get(d, zero)["lex_f"] - scores.get(d, zero)["lex_m"] for d in top]
        out[f"LIWC@{k}"] = abs(sum(shares) / len(shares)) * 100 if shares else 0.0
    return out
