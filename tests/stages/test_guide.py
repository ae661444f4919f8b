"""docs/adding-a-method.md, followed as written (issue 31): in a copy of the tiny profile (the
repository's pipeline, stages and tests), write the guide's four plug-in files (a
counterfactual loss term, a metric with a parameter of its own, a model family with a key of
its own, a data source), merge its params entries, and run its commands as written: the new
term passes the registry tests, `dvc repro` runs every plug-in end to end, an experiment
changes the term's own λ. Nothing but the four files and params.yaml is edited. The metric
also reaches metrics/*.json, summary.md, comparison.csv, fair-eval and ir_measures. (An
ordering: tests/stages/test_ordering_plugin.py.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline import paths
from pipeline.report import docs
from pipeline.report.build import read_curve
from tests.stages.conftest import ROOT, run

pytestmark = pytest.mark.slow
Dvc = Callable[..., subprocess.CompletedProcess[str]]
GUIDE = ROOT / "docs" / "adding-a-method.md"


def _blocks(kind: str) -> list[docs.Block]:
    return [b for b in docs.parse(GUIDE) if b.kind == kind]


def _guided(lang: str) -> list[docs.Block]:
    """The guide's blocks of `lang` marked as tested by this file."""
    return [b for b in _blocks("tested-by") if b.name == f"tests/stages/{Path(__file__).name}"
            and b.lang == lang]  # fmt: skip


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> None:
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v


def _python(repo: Path, code: str) -> str:
    """Run ``code`` with the repository copy's own `pipeline` (its new plug-ins)."""
    return run([sys.executable, "-c", code], repo).stdout


def test_the_guide_adds_four_plugins_one_file_each(
    tiny_repo: Path, tmp_path: Path, dvc: Dvc
) -> None:
    files = {str(b.name): b.text for b in _blocks("file")}
    assert sorted(files) == [
        "pipeline/data/grep_small.py", "pipeline/metrics/group_share.py",
        "pipeline/models/scaled_bi_encoder.py", "pipeline/train/losses/version_gap.py",
    ]  # fmt: skip
    (params_block,) = _guided("yaml")
    (commands_block,) = _guided("bash")
    repo = tmp_path / "r"
    shutil.copytree(tiny_repo, repo)
    run(["git", "reset", "-q", "--hard", "HEAD"], repo)  # earlier tests ran experiments in it
    dvc(repo, "checkout", "-f", "-q")
    shutil.copytree(ROOT / "tests", repo / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "the repository's tests"], repo)

    for path, text in files.items():  # the guide's files, as written
        (repo / path).write_text(text, encoding="utf-8")
    params = yaml.safe_load((repo / "params.yaml").read_text())
    _merge(params, yaml.safe_load(params_block.text))
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    outputs = [run(["bash", "-c", line], repo) for line in commands_block.text.splitlines()
               if line.strip() and not line.startswith("#")]  # fmt: skip

    registry, _, _, experiment = outputs  # registry tests, deps --write, repro, dvc exp run
    assert " passed" in registry.stdout and "failed" not in registry.stdout, registry.stdout
    losses = _python(repo, "from pipeline.train.losses import LOSSES; print(*LOSSES)").split()
    assert "version_gap" in losses  # the registry tests covered it
    queries = pl.read_parquet(repo / "data/queries.parquet")
    assert queries.height == 6 and queries["fold"].n_unique() == 2  # the new source
    meta = json.loads((repo / "models/version_gap/fold-0/ranker.json").read_text())
    assert meta["arch"] == "scaled_bi_encoder" and meta["settings"]["scale"] == 2.0  # its key
    # the counterfactual term trained: the same initial model and first batch as the
    # baseline, plus λ · the F/M gap of the batch's query (> 0 for an untrained model)
    curves = {m: read_curve(repo / paths.live(m)) for m in ("baseline", "version_gap")}
    assert curves["version_gap"]["loss"][0] > curves["baseline"]["loss"][0]
    ran = [line for line in experiment.stdout.splitlines() if "Running stage" in line]
    assert any("train@version_gap" in line for line in ran), experiment.stdout
    assert not any("@baseline" in line for line in ran), experiment.stdout  # λ is its own

    for m in ("bm25", "zero-shot", "baseline", "version_gap"):
        values = json.loads((repo / f"eval/{m}/metrics.json").read_text())  # every key
        assert 0.0 <= values["GroupShare@10"] <= 1.0, m
    summary = (repo / "metrics/summary.md").read_text()
    assert "GroupShare@10 ·" in summary, summary
    comparison = pl.read_csv(repo / "metrics/comparison.csv")
    assert set(comparison.filter(pl.col("metric") == "GroupShare@10")["method"]) >= {"version_gap"}

    fair_eval = json.loads(
        _python(
            repo,
            "import json, sys, io, contextlib\n"
            "from pipeline.evaluate_run import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['runs/version_gap/run.trec', '--qrels', 'data/qrels.parquet', '--corpus',"
            " 'data/corpus.parquet', '--tokenizer', 'reference', '--cutoffs', '10', '--out',"
            " 'fair-eval.json'])\n"
            "print(open('fair-eval.json').read())",
        )
    )
    mine = json.loads((repo / "eval/version_gap/metrics.json").read_text())  # every key
    assert fair_eval["GroupShare@10"] == pytest.approx(mine["GroupShare@10"])
    value = _python(
        repo,
        "import ir_measures, polars as pl\n"
        "from pipeline import measures\n"
        "coll = measures.Collection.from_corpus(pl.read_parquet('data/corpus.parquet'),"
        " tokenizer='reference')\n"
        "m = measures.ir_measures_for(coll)\n"
        "run = pl.read_parquet('runs/version_gap/run.parquet').select('query_id', 'doc_id',"
        " 'score')\n"
        "qrels = pl.read_parquet('data/qrels.parquet')\n"
        "agg = ir_measures.calc_aggregate([m.GroupShare@10], qrels.to_pandas(), run.to_pandas())\n"
        "print(list(agg.values())[0])",
    )
    assert float(value) == pytest.approx(mine["GroupShare@10"])

    status = run(["git", "status", "--porcelain", "-uall", "--", "pipeline", "stages", "tests",
                  "dvc.yaml"], repo)  # fmt: skip
    changed = sorted(line for line in status.stdout.splitlines() if "__pycache__" not in line)
    # dvc.yaml: the generated code deps (and the new method's stages), no edit by hand
    assert changed == sorted([" M dvc.yaml", *(f"?? {path}" for path in files)]), status.stdout
