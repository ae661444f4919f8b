"""The paper-scale profiles end to end through DVC, on the real ir_datasets code, offline.

Each profile of `tests/stages/paper_profiles.py` (docs/paper-scale.md's commands, shrunk to the
miniature cache of `tests/irds_miniature.py`) runs `dvc repro` in a throw-away repository, with
every Python process unable to reach the network. The 215-query profile runs the whole pipeline:
extract → score → candidates → order → train (two steps of the tiny random BERT, the default 3
seeds) → evaluate → report and audit. The other two run what differs from it and no more (issue
34: three full runs took 396 s on a quiet 2-core machine, these 262 s): the 1,765-query profile
differs only before training (bm25s over the whole collection as the first stage, its query set
and candidate depth), so it runs the data stages, the first stage's evaluation and the audit;
the TREC Fair 2022 profile (another source, the track's alignments, the default bi-encoder) runs
everything for the baseline alone (LWS's reading of the training candidates is the 215
profile's).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline import io
from pipeline.audit import RUNS_DIR
from pipeline.params import load_params
from tests.conftest import Miniature, NoNetwork
from tests.stages.conftest import ROOT, make_repo, run
from tests.stages.paper_profiles import (
    DOC,
    EXPERIMENTS,
    METHODS,
    doc_settings,
    nested,
    overrides,
)

pytestmark = pytest.mark.slow


def reproduce(
    profile: str,
    tmp_path: Path,
    offline: NoNetwork,
    targets: tuple[str, ...] = (),
    methods: tuple[str, ...] = tuple(METHODS),
) -> Path:
    """`dvc repro` (of ``targets``, else everything) of ``profile`` with ``methods``."""
    params = tmp_path / "params_overrides.yaml"
    over = overrides(profile) | {"methods": {m: METHODS[m] for m in methods}}
    params.write_text(yaml.safe_dump(over, sort_keys=False))
    repo = make_repo(tmp_path / "repo", params)
    run([sys.executable, "-m", "dvc", "config", "core.check_update", "false"], repo)
    run([sys.executable, "-m", "dvc", "repro", "-q", *targets], repo, env=offline.env)
    return repo


def check_common(
    repo: Path, seeds: int, arch: str = "cross_encoder", methods: tuple[str, ...] = tuple(METHODS)
) -> None:
    for method in [*methods, "bm25", "zero-shot"]:
        metrics = json.loads((repo / f"metrics/{method}.json").read_text())
        assert metrics["n_queries"] > 0 and 0.0 <= metrics["MRR@10"] <= 1.0, method
    runs = sorted((repo / "runs" / "baseline").rglob("run.parquet"))
    assert len(runs) == seeds
    summary = (repo / "metrics/summary.md").read_text()
    assert all(f"| {m} |" in summary for m in methods)
    meta = json.loads(next((repo / "models" / "baseline").rglob("ranker.json")).read_text())
    assert meta["arch"] == arch


def rr_at_10(run: pl.DataFrame, relevant: dict[str, str]) -> float:
    """Mean reciprocal rank at 10 of the one relevant passage per query, by hand."""
    values = []
    for qid, docs in (
        run.sort("rank").group_by("query_id", maintain_order=True).agg("doc_id").rows()
    ):
        ranked = docs[:10]
        values.append(1 / (ranked.index(relevant[qid]) + 1) if relevant[qid] in ranked else 0.0)
    return sum(values) / len(values)


def test_msmarco_215(tmp_path: Path, miniature: Miniature, no_network: NoNetwork) -> None:
    repo = reproduce("msmarco-215", tmp_path, no_network)
    check_common(repo, seeds=3)
    queries = pl.read_parquet(repo / "data/queries.parquet")
    assert queries.filter(pl.col("split") == "test").height == 215
    cands = pl.read_parquet(repo / "data/candidates.parquet")
    assert cands.group_by("query_id").len()["len"].max() == 8
    audit = pl.read_csv(repo / "metrics/audit_edbt2022.csv")
    assert set(audit["status"]) == {"ok"}  # every passage of the ten runs has its text
    for name in ("inference_bert-mini", "inference_electra-small_bias-aware"):
        expected = rr_at_10(
            io.read_trec_run(RUNS_DIR / f"{name}.trec.gz"), miniature.msmarco.relevant
        )
        ours = audit.filter(pl.col("run") == name, pl.col("metric") == "MRR@10")["ours"][0]
        assert ours == pytest.approx(expected, abs=5e-5)  # the CSV keeps 4 decimals


def test_msmarco_1765(tmp_path: Path, miniature: Miniature, no_network: NoNetwork) -> None:
    repo = reproduce("msmarco-1765", tmp_path, no_network, ("evaluate_first_stage", "audit"))
    bm25 = json.loads((repo / "metrics/bm25.json").read_text())  # the first stage evaluated
    assert bm25["n_queries"] >= 0.99 * 1765 and 0.0 < bm25["MRR@10"] <= 1.0
    assert not (repo / "models").exists()  # no method trained: the 215 profile's path
    queries = pl.read_parquet(repo / "data/queries.parquet")
    assert queries.filter(pl.col("split") == "test").height == 1765
    first = pl.read_parquet(repo / "data/first_stage.parquet")
    assert first.group_by("query_id").len()["len"].max() == 20  # bm25s over the collection
    planted = {(q, d) for q, d in miniature.msmarco.relevant.items() if int(d) >= 9_000_000}
    top = set(first.filter(pl.col("rank") == 1).select("query_id", "doc_id").rows())
    assert len(planted & top) >= 0.9 * len(planted)
    audit = pl.read_csv(repo / "metrics/audit_edbt2022.csv")
    assert not any(s.startswith("skipped") for s in audit["status"])


def test_trec_fair_2022(tmp_path: Path, miniature: Miniature, no_network: NoNetwork) -> None:
    repo = reproduce("trec-fair-2022", tmp_path, no_network, methods=("baseline",))
    check_common(repo, seeds=3, arch="bi_encoder", methods=("baseline",))  # the doc's command
    # keeps model.arch and the default seeds
    align = pl.read_parquet(repo / "data/alignments.parquet")
    assert set(align["dimension"]) == {"gender_category", "page_subcont_regions"}
    corpus = pl.read_parquet(repo / "data/corpus.parquet")
    assert set(align["doc_id"]) == set(corpus["doc_id"])
    metrics = json.loads((repo / "eval/baseline/metrics.json").read_text())  # every key
    assert 0.0 <= metrics["AWRF@10"] <= 1.0
    audit = pl.read_csv(repo / "metrics/audit_edbt2022.csv")
    assert all(s.startswith("skipped") for s in audit["status"])  # MS MARCO only


def test_profiles_are_the_docs(tmp_path: Path) -> None:
    """Each doc command, applied through DVC's own `-S` code (as `dvc exp run` applies it),
    gives the params that `DOC`, which the tests above run, gives."""
    from dvc.utils.hydra import apply_overrides

    commands = doc_settings()
    assert set(EXPERIMENTS.values()) <= set(commands), sorted(commands)
    base = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    for profile, name in EXPERIMENTS.items():
        by_dvc = tmp_path / f"{name}-dvc.yaml"
        by_dvc.write_text((ROOT / "params.yaml").read_text(encoding="utf-8"), encoding="utf-8")
        apply_overrides(str(by_dvc), commands[name])
        by_test = tmp_path / f"{name}-test.yaml"
        by_test.write_text(yaml.safe_dump(merged(base, nested(DOC[profile])), sort_keys=False),
                           encoding="utf-8")  # loss terms keep their order  # fmt: skip
        assert load_params(by_dvc) == load_params(by_test), profile
    assert overrides("msmarco-1765")["dataset"]["msmarco_passage"]["query_set"] == "1765"
    assert overrides("msmarco-215")["train"]["seeds"] == [1, 2, 3]


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with the nested mapping `extra` set into it (a copy)."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) else value
    return out
