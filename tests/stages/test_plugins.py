"""Every plug-in kind is one new file: in a copy of the tiny profile, a throwaway loss with
its own parameter, metric, model family and data source, each one file (plus params.yaml
entries naming them), and `dvc repro` runs them through the whole pipeline: the new metric
reaches metrics/*.json, summary.md, comparison.csv, fair-eval and ir_measures; no other file
is edited. (A new ordering: tests/stages/test_ordering_plugin.py.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline import paths
from pipeline.report.build import read_curve
from tests.stages.conftest import run

pytestmark = pytest.mark.slow
Dvc = Callable[..., subprocess.CompletedProcess[str]]

LOSS = '''"""`scaled_margin`: the margin loss times `scale` (a throwaway test plug-in)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pipeline.config import Range
from pipeline.train.losses._pairwise import hinge
from pipeline.train.losses.common import Loss

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class ScaledConfig:
    scale: Annotated[float, Range(gt=0)]


def loss(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], cfg: ScaledConfig) -> Tensor:
    """``scale × mean(max(0, 1 − tanh s⁺ + tanh s⁻))``.

    Paper: none (tests/stages/test_plugins.py). Inputs: scores; ``scale``.
    """
    return cfg.scale * hinge(s_pos, s_neg, 0.0, 0.0, 1.0)


RECORD = Loss("scaled_margin", ScaledConfig, fn=loss)
'''

METRIC = '''"""`fshare`: share of female documents in the top k (a throwaway test plug-in)."""

from __future__ import annotations

import polars as pl

from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require


def fshare(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per query, the share of documents labelled F among the top k."""
    groups = require(ctx, "doc_groups", "fshare")
    ranked = ctx.run.join(groups, on="doc_id", how="left")
    female = (pl.col("group") == "F").fill_null(False).cast(pl.Float64)
    values = ranked.group_by("query_id").agg(
        female.filter(pl.col("rank") <= k).mean().alias(f"FShare@{k}") for k in cutoffs
    )
    return finish(query_frame(ctx.run), values, [])


RECORD = Metric(
    "fshare",
    fshare,
    (
        Measure("FShare@{k}", "↑", "share of female documents in the top k", lo=0.0, hi=1.0,
                table="core", ir_measures="FShare"),
    ),
    reference="none (tests/stages/test_plugins.py)",
)  # fmt: skip
'''

FAMILY = '''"""`dot_encoder`: the bi-encoder under a name of its own (a throwaway test plug-in)."""

from __future__ import annotations

from transformers import AutoModel

from pipeline.models.base import Family
from pipeline.models.bi_encoder import BiEncoder


class DotEncoder(BiEncoder):
    arch = "dot_encoder"


RECORD = Family("dot_encoder", DotEncoder, AutoModel, "a bi-encoder (test plug-in)")
'''

SOURCE = '''"""`grep-small`: Grep-BiasIR's first queries as a source of its own (a test plug-in)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.data.common import Extracted, Source
from pipeline.data.grep_biasir import GrepBiasIRConfig
from pipeline.data.grep_biasir import extract as grep_biasir


@dataclass(frozen=True)
class SmallConfig:
    queries: int = 6
    folds: int = 2


def extract(cfg: SmallConfig) -> Extracted:
    """Grep-BiasIR's first ``queries`` queries in ``folds`` folds."""
    inner = GrepBiasIRConfig(folds=cfg.folds, max_queries=cfg.queries, bm25_negatives=1,
                             bm25_pool=5)  # fmt: skip
    return grep_biasir(inner)


RECORD = Source("grep-small", extract, SmallConfig)
'''

FILES = {
    "pipeline/train/losses/scaled_margin.py": LOSS,
    "pipeline/metrics/fshare.py": METRIC,
    "pipeline/models/dot_encoder.py": FAMILY,
    "pipeline/data/grep_small.py": SOURCE,
}


def _python(repo: Path, code: str) -> str:
    """Run ``code`` with the repository copy's own `pipeline` (its new plug-ins)."""
    return run([sys.executable, "-c", code], repo).stdout


def test_a_new_loss_metric_family_and_source_are_one_file_each(
    tiny_repo: Path, tmp_path: Path, dvc: Dvc
) -> None:
    repo = tmp_path / "r"
    shutil.copytree(tiny_repo, repo)
    run(["git", "reset", "-q", "--hard", "HEAD"], repo)  # earlier tests ran experiments in it
    dvc(repo, "checkout", "-f", "-q")
    for path, text in FILES.items():
        (repo / path).write_text(text)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["dataset"] = {"name": "grep-small", "grep_small": {"queries": 6, "folds": 2}}
    params["model"]["arch"] = "dot_encoder"
    params["methods"]["scaled"] = {
        "ordering": "shuffle",
        "loss": "scaled_margin",
        "psi": "bool_abs",
        "scale": 3.0,
    }
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    dvc(repo, "repro")

    queries = pl.read_parquet(repo / "data/queries.parquet")
    assert queries.height == 6 and queries["fold"].n_unique() == 2  # the new source
    meta = json.loads((repo / "models/scaled/fold-0/ranker.json").read_text())
    assert meta["arch"] == "dot_encoder"  # the new family trained, saved and reloaded
    curves = {m: read_curve(repo / paths.live(m)) for m in ("baseline", "scaled")}  # DVCLive
    # step 1: the same initial model and batch as the baseline, the loss times `scale`
    assert curves["scaled"]["loss"][0] == pytest.approx(3.0 * curves["baseline"]["loss"][0])

    for m in ("bm25", "zero-shot", "baseline", "scaled"):
        values = json.loads((repo / f"metrics/{m}.json").read_text())
        assert 0.0 <= values["FShare@10"] <= 1.0, m
    summary = (repo / "metrics/summary.md").read_text()
    assert "FShare@10 ↑" in summary, summary
    comparison = pl.read_csv(repo / "metrics/comparison.csv")
    assert set(comparison.filter(pl.col("metric") == "FShare@10")["method"]) >= {"scaled"}

    fair_eval = json.loads(
        _python(
            repo,
            "import json, sys, io, contextlib\n"
            "from pipeline.evaluate_run import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['runs/scaled/run.trec', '--qrels', 'data/qrels.parquet', '--corpus',"
            " 'data/corpus.parquet', '--tokenizer', 'reference', '--cutoffs', '10', '--out',"
            " 'fair-eval.json'])\n"
            "print(open('fair-eval.json').read())",
        )
    )
    scaled = json.loads((repo / "metrics/scaled.json").read_text())
    assert fair_eval["FShare@10"] == pytest.approx(scaled["FShare@10"])
    value = _python(
        repo,
        "import ir_measures, polars as pl\n"
        "from pipeline import measures\n"
        "coll = measures.Collection.from_corpus(pl.read_parquet('data/corpus.parquet'),"
        " tokenizer='reference')\n"
        "m = measures.ir_measures_for(coll)\n"
        "run = pl.read_parquet('runs/scaled/run.parquet').select('query_id', 'doc_id', 'score')\n"
        "qrels = pl.read_parquet('data/qrels.parquet')\n"
        "agg = ir_measures.calc_aggregate([m.FShare@10], qrels.to_pandas(), run.to_pandas())\n"
        "print(list(agg.values())[0])",
    )
    assert float(value) == pytest.approx(scaled["FShare@10"])

    status = run(["git", "status", "--porcelain", "-uall", "--", "pipeline", "stages", "dvc.yaml"],
                 repo)  # fmt: skip
    changed = sorted(line for line in status.stdout.splitlines() if "__pycache__" not in line)
    assert changed == sorted(f"?? {path}" for path in FILES), status.stdout
