"""The comparison as a ranx `Report.to_dict()`: same keys and values as `ranx.compare`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.report.ranx_export import ranx_report

QIDS = [f"q{i}" for i in range(6)]
# Relevant document d1 of every query sits at these ranks in three runs (MRR = 1/rank).
RANKS = {"bm25": [1, 2, 3, 1, 2, 5], "model_a": [1, 1, 2, 1, 3, 1], "model_b": [4, 2, 3, 2, 2, 5]}


def _runs() -> dict[str, dict[str, dict[str, float]]]:
    """ranx-style runs: the relevant doc at its rank, filler docs elsewhere (10 docs)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, ranks in RANKS.items():
        out[name] = {}
        for q, r in zip(QIDS, ranks, strict=True):
            docs = [f"x{i}" for i in range(9)]
            docs.insert(r - 1, "d1")
            out[name][q] = {d: float(10 - i) for i, d in enumerate(docs)}
    return out


def _per_query(name: str) -> pl.DataFrame:
    return pl.DataFrame({"query_id": QIDS, "mrr@10": [1.0 / r for r in RANKS[name]]})


@pytest.mark.slow
def test_export_has_ranx_report_keys_and_values(tmp_path: Path) -> None:
    ranx = pytest.importorskip("ranx")
    qrels = ranx.Qrels({q: {"d1": 1} for q in QIDS})
    runs = [ranx.Run(r, name=n) for n, r in _runs().items()]
    expected = ranx.compare(qrels, runs, ["mrr@10"], stat_test="student").to_dict()
    ours = ranx_report({n: _per_query(n) for n in RANKS}, ["mrr@10"])
    assert list(ours) == list(expected)
    assert ours["stat_test"] == "student" and ours["model_names"] == list(RANKS)
    for m in RANKS:
        assert ours[m]["scores"]["mrr@10"] == pytest.approx(expected[m]["scores"]["mrr@10"])
        assert ours[m]["win_tie_loss"] == expected[m]["win_tie_loss"]
        for o, p in expected[m]["comparisons"].items():
            assert ours[m]["comparisons"][o]["mrr@10"] == pytest.approx(p["mrr@10"], rel=1e-5)
    # by hand, model_a vs bm25: wins q1, q2, q5 (1 > 1/2, 1/2 > 1/3, 1 > 1/5), ties q0, q3,
    # loses q4 (1/3 < 1/2)
    assert ours["model_a"]["win_tie_loss"]["bm25"]["mrr@10"] == {"W": 3, "T": 2, "L": 1}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(ours))
    assert json.loads(path.read_text())["model_b"]["scores"]["mrr@10"] == pytest.approx(
        np.mean([1 / 4, 1 / 2, 1 / 3, 1 / 2, 1 / 2, 1 / 5])
    )


def test_export_uses_query_means_over_seeds_and_shared_queries() -> None:
    base = pl.DataFrame({"query_id": ["a", "b", "c"], "M": [0.2, 0.4, 0.6]})
    seeds = {
        1: pl.DataFrame({"query_id": ["a", "b", "c"], "M": [0.3, 0.5, None]}),
        2: pl.DataFrame({"query_id": ["a", "b", "c"], "M": [0.5, 0.5, None]}),
    }
    out = ranx_report({"base": base, "seeded": seeds}, ["M"])
    assert out["seeded"]["scores"]["M"] == pytest.approx(0.45)  # mean of 0.4 and 0.5
    # query means 0.4, 0.5 vs 0.2, 0.4 on a, b (c is null): two wins
    assert out["seeded"]["win_tie_loss"]["base"]["M"] == {"W": 2, "T": 0, "L": 0}
    assert out["base"]["win_tie_loss"]["seeded"]["M"] == {"W": 0, "T": 0, "L": 2}
    p = out["seeded"]["comparisons"]["base"]["M"]
    assert p is not None and p == out["base"]["comparisons"]["seeded"]["M"]
