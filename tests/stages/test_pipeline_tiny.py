"""End to end on the tiny profile: outputs, caching granularity, and stage errors."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
import yaml

from tests.stages.conftest import ROOT, make_repo, run

pytestmark = pytest.mark.slow
Dvc = Callable[..., subprocess.CompletedProcess[str]]


def _ran(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def test_repro_writes_every_artifact(tiny_repo: Path) -> None:
    for m in ("baseline", "penalty_irrelevant"):
        metrics = json.loads((tiny_repo / f"metrics/{m}.json").read_text())
        assert 0.0 <= metrics["MRR@10"] <= 1.0
        assert 0.0 <= metrics["NFaiRR@10"] <= 1.0
        run = pl.read_parquet(tiny_repo / f"runs/{m}/run.parquet")
        assert run["query_id"].n_unique() >= 3
        curve = tiny_repo / f"dvclive/{m}/plots/metrics/fold-0/loss.tsv"
        assert curve.read_text().startswith("step\tloss")
    summary = (tiny_repo / "metrics/summary.md").read_text()
    assert "| baseline |" in summary and "| penalty_irrelevant |" in summary
    # the profile's `controls:` pair, compared directly (treatment − control)
    assert "| penalty_irrelevant − baseline | the penalty term" in summary, summary
    controls = pl.read_csv(tiny_repo / "metrics/controls.csv")
    assert "baseline" in set(controls["control"])


def test_inference_time_entries_and_the_planted_positive_control(tiny_repo: Path) -> None:
    """The `post:` entries re-rank the baseline's runs (same rows), λ 0 is its ranking, the
    planted λ 5 is detected by the report's test, and the frontier section and figure exist."""
    base = pl.read_parquet(tiny_repo / "runs/baseline/run.parquet")
    zero = pl.read_parquet(tiny_repo / "runs/shift_0/run.parquet")
    key = ["query_id", "doc_id", "rank"]
    assert zero.select(key).sort(key).equals(base.select(key).sort(key))
    assert (tiny_repo / "runs/shift_5/transfer.parquet").is_file()
    meta = (tiny_repo / "runs/shift_5/run.trec.ir_metadata.yaml").read_text()
    assert "processor: score_shift" in meta and "stages.post shift_5" in meta
    base_m = json.loads((tiny_repo / "metrics/baseline.json").read_text())
    zero_m = json.loads((tiny_repo / "metrics/shift_0.json").read_text())
    assert zero_m["NFaiRR@10"] == base_m["NFaiRR@10"] and zero_m["MRR@10"] == base_m["MRR@10"]
    planted = json.loads((tiny_repo / "metrics/shift_5.json").read_text())
    assert planted["NFaiRR@10"] > base_m["NFaiRR@10"]
    summary = (tiny_repo / "metrics/summary.md").read_text()
    section = summary[summary.index("## Inference-time methods"):]
    row = next(line for line in section.splitlines() if line.startswith("| shift_5 |"))
    assert "| yes" in row, row
    zero_row = next(line for line in section.splitlines() if line.startswith("| shift_0 |"))
    assert "+0.0000" in zero_row and "| no" in zero_row, zero_row
    assert "**Positive control: detected.**" in section
    assert "against the re-ranking frontier" in section and "- **penalty_irrelevant**:" in section
    assert (tiny_repo / "plots/report/frontier.png").stat().st_size > 10_000
    cmp = pl.read_csv(tiny_repo / "metrics/comparison.csv")
    assert {"shift_5", "fa_ir"} <= set(cmp["method"])


def test_a_post_lambda_reruns_only_its_entry(tiny_repo: Path, dvc: Dvc) -> None:
    out = dvc(tiny_repo, "exp", "run", "-S", "post.shift_05.lambda=1")
    ran = {"params", "post@shift_05", "evaluate@shift_05", "report"}
    assert _ran(out.stdout) == ran, out.stdout


def test_lambda_change_reruns_only_that_method(tiny_repo: Path, dvc: Dvc) -> None:
    before = (tiny_repo / "metrics/penalty_irrelevant.json").read_text()
    order = (tiny_repo / "data/order/penalty_irrelevant.parquet").read_bytes()
    out = dvc(tiny_repo, "exp", "run", "-S", "methods.penalty_irrelevant.loss.penalty.lambda=2")
    assert (tiny_repo / "metrics/penalty_irrelevant.json").read_text() != before
    # the order stage's slice holds the method's ordering keys, not its loss terms (issue
    # 42, pipeline/deps/slices.py), so it does not rerun; no other method moves
    assert (tiny_repo / "data/order/penalty_irrelevant.parquet").read_bytes() == order
    assert _ran(out.stdout) == {
        "params",  # validates params.yaml, rewrites train@penalty_irrelevant's slice only
        "train@penalty_irrelevant",  # trains and reranks
        "evaluate@penalty_irrelevant",
        "report",
    }, out.stdout


def test_sigma_change_reruns_only_curriculum_stages(tiny_repo: Path, dvc: Dvc) -> None:
    out = dvc(tiny_repo, "exp", "run", "-S", "orderings.curriculum.sigma=2")
    ran = _ran(out.stdout)
    curriculum = ("curriculum_low_high", "curriculum_high_low")  # both directions, one sigma
    assert {f"order@{m}" for m in curriculum} <= ran, out.stdout
    stages = ("order", "train", "evaluate")
    allowed = {f"{stage}@{m}" for stage in stages for m in curriculum}
    allowed |= {"curriculum_figure", "report"}  # the figures read orderings.curriculum too
    allowed |= {"params"}  # validates every change first (its output keeps its bytes)
    assert ran <= allowed, out.stdout


# late interaction only: the cross-encoder runs the whole pipeline in the paper profiles
# (tests/stages/test_paper_profiles.py), and every family in tests/unit/test_model_families.py
@pytest.mark.parametrize("arch", ["late_interaction"])
def test_arch_change_reruns_every_model_stage_only(
    arch: str, tiny_repo: Path, tmp_path: Path, dvc: Dvc
) -> None:
    repo = _head_copy(tiny_repo, tmp_path / "r", dvc)
    out = dvc(repo, "exp", "run", "-S", f"model.arch={arch}")
    ran = _ran(out.stdout)
    methods = ("baseline", "penalty_irrelevant", "curriculum_low_high", "curriculum_high_low")
    expected = {f"{s}@{m}" for s in ("train", "evaluate") for m in methods}
    expected |= {"params", "features", "rerank_zero_shot", "evaluate_zero_shot", "report"}
    # the inference-time entries re-rank the baseline's new runs (the profile's `post:`)
    entries = yaml.safe_load((repo / "params.yaml").read_text())["post"]
    expected |= {f"{s}@{e}" for s in ("post", "evaluate") for e in entries}
    assert ran == expected, out.stdout
    meta = json.loads((repo / "models/baseline/fold-0/ranker.json").read_text())
    assert meta["arch"] == arch
    assert json.loads((repo / "metrics/zero-shot.json").read_text())["n_queries"] == 8


def test_every_query_is_tested_once_by_a_model_that_never_saw_it(tiny_repo: Path) -> None:
    queries = pl.read_parquet(tiny_repo / "data/queries.parquet")
    assert queries["fold"].null_count() == 0 and queries["query_id"].n_unique() == 8
    corpus = pl.read_parquet(tiny_repo / "data/corpus.parquet")
    triples = pl.read_parquet(tiny_repo / "data/triples.parquet")
    candidates = pl.read_parquet(tiny_repo / "data/candidates.parquet")
    for fold in queries["fold"].unique().to_list():
        test = set(queries.filter(pl.col("fold") == fold)["query_id"])
        test_docs = set(corpus.filter(pl.col("fold") == fold)["doc_id"])
        train = triples.filter(pl.col("fold") == fold)
        assert not test & set(train["query_id"])
        assert not test_docs & (set(train["pos_doc_id"]) | set(train["neg_doc_id"]))
        reranked = candidates.filter(pl.col("fold") == fold)
        assert set(reranked["query_id"]) == test and set(reranked["doc_id"]) <= test_docs
    for row in ("baseline", "bm25", "zero-shot"):
        metrics = json.loads((tiny_repo / f"metrics/{row}.json").read_text())
        assert metrics["n_queries"] == 8, row
    assert "2-fold cross-validation, 8 queries" in (tiny_repo / "metrics/summary.md").read_text()


def test_unknown_method_stage_error(tiny_repo: Path, tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shutil.copytree(tiny_repo, repo)

    proc = run(["python", "-m", "stages.train", "nope"], repo, check=False)
    assert proc.returncode == 1
    assert (
        "unknown method 'nope'; known (under `methods:` in params.yaml): ['baseline'" in proc.stderr
    )


def test_ill_typed_param_stops_repro(tmp_path: Path, dvc: Dvc) -> None:
    repo = make_repo(tmp_path / "r", ROOT / "tests/data/params_tiny.yaml")
    params = repo / "params.yaml"  # ill-typed after dvc.yaml's deps were generated from it
    text = params.read_text()
    assert "test_fraction: 0.4" in text
    params.write_text(text.replace("test_fraction: 0.4", "test_fraction: lots"))
    proc = dvc(repo, "repro", "extract", check=False)
    assert proc.returncode != 0
    assert (
        "params key 'dataset.grep_biasir.test_fraction': expected float, got 'lots'"
        in proc.stderr + proc.stdout
    )
    assert not (repo / "data/corpus.parquet").exists()


def _head_copy(tiny_repo: Path, dest: Path, dvc: Dvc) -> Path:
    """A copy of the tiny repository with its workspace back at HEAD (earlier tests ran
    experiments in it)."""
    shutil.copytree(tiny_repo, dest)

    run(["git", "reset", "-q", "--hard", "HEAD"], dest)
    dvc(dest, "checkout", "-f", "-q")
    return dest


def test_seeds_train_each_method_per_seed(tiny_repo: Path, tmp_path: Path, dvc: Dvc) -> None:
    repo = _head_copy(tiny_repo, tmp_path / "r", dvc)
    out = dvc(repo, "exp", "run", "-S", "train.seeds=[1,2]", "-S", "train.keep_models=all")
    ran = _ran(out.stdout)
    assert "train@baseline" in ran and not {"extract", "score", "candidates"} & ran, out.stdout
    assert "order@baseline" in ran, out.stdout  # a seed draws its own negatives and order
    ordered = pl.read_parquet(repo / "data/order/baseline.parquet")
    by_seed = {s: ordered.filter(pl.col("seed") == s).drop("seed") for s in (1, 2)}
    assert by_seed[1].height and not by_seed[1].equals(by_seed[2])
    same_seed = pl.read_parquet(repo / "data/order/penalty_irrelevant.parquet")
    assert same_seed.filter(pl.col("seed") == 1).drop("seed").equals(by_seed[1])  # paired
    for m in ("baseline", "penalty_irrelevant"):
        seeds = {}
        for seed in (1, 2):
            assert (repo / f"models/{m}/seed-{seed}/fold-0/ranker.json").is_file()
            assert (repo / f"runs/{m}/seed-{seed}/run.trec").is_file()
            seeds[seed] = json.loads((repo / f"eval/{m}/seed-{seed}/metrics.json").read_text())
        metrics = json.loads((repo / f"eval/{m}/metrics.json").read_text())  # every key
        assert metrics["seeds"] == [1, 2]
        for key in ("MRR@10", "NFaiRR@10"):
            values = [seeds[1][key], seeds[2][key]]
            assert metrics[key] == pytest.approx(sum(values) / 2)
            assert metrics["std"][key] == pytest.approx(abs(values[0] - values[1]) / 2**0.5)
    weights = [b"".join(p.read_bytes() for p in
                        sorted((repo / f"models/baseline/seed-{s}/fold-0").glob("*.safetensors")))
               for s in (1, 2)]  # fmt: skip
    assert weights[0] != weights[1]  # two seeds, two models
    summary = (repo / "metrics/summary.md").read_text()
    assert "±" in summary and "mean ± std over its seeds" in summary, summary
    # the default keeps only the first seed's models; every seed's runs are still made
    dvc(repo, "exp", "run", "-S", "train.seeds=[1,2]", "-S", "train.keep_models=first",
        "train@baseline")  # fmt: skip
    assert (repo / "models/baseline/seed-1/fold-0/ranker.json").is_file()
    assert not (repo / "models/baseline/seed-2").exists()
    assert (repo / "runs/baseline/seed-2/run.parquet").is_file()


def test_metrics_diff_between_two_experiments(tiny_repo: Path, tmp_path: Path, dvc: Dvc) -> None:
    repo = _head_copy(tiny_repo, tmp_path / "r", dvc)
    for name, lam in (("lam-a", "0.001"), ("lam-b", "2")):
        dvc(repo, "exp", "run", "-n", name, "-S",
            f"methods.penalty_irrelevant.loss.penalty.lambda={lam}")
    changed = json.loads(dvc(repo, "metrics", "diff", "lam-a", "lam-b", "--json").stdout)
    # the method's headline; the others: the same
    assert set(changed) == {"metrics/penalty_irrelevant.json"}, changed
    full = json.loads(dvc(repo, "metrics", "diff", "lam-a", "lam-b", "--all", "--json").stdout)
    flat = full["metrics/penalty_irrelevant.json"]
    assert {"MRR@10", "ARaB-tf@10", "NFaiRR@10", "nDCG@10"} <= set(flat), flat
    for key, row in changed["metrics/penalty_irrelevant.json"].items():
        assert row["diff"] == pytest.approx(row["new"] - row["old"]), key
    assert full["metrics/baseline.json"]["MRR@10"]["diff"] == 0
    table = dvc(repo, "metrics", "diff", "lam-a", "lam-b", "--all", "--md").stdout
    assert re.search(r"\| metrics/penalty_irrelevant\.json +\| MRR@10 +\| [0-9.]+ +\|", table), (
        table
    )


EXP_SHOW = ("dvc exp show --only-changed --drop "
            r"'Created|eval|params\.yaml|[^:]+/[^:]+$|.+:(?!(MRR|NFaiRR)@10$)'")
"""The README's readable `dvc exp show`: the settings an experiment changed beside MRR@10 and
NFaiRR@10 of the files it changed (no creation time, no dependency hashes)."""


def test_dvc_views_fit_a_terminal(tiny_repo: Path, tmp_path: Path, dvc: Dvc) -> None:
    """`dvc metrics show`, `dvc metrics diff` and the README's `dvc exp show` after an
    experiment: every line fits 200 columns and no cell is cut to "…" (issue 41)."""
    repo = _head_copy(tiny_repo, tmp_path / "r", dvc)
    dvc(repo, "exp", "remove", "-A")  # other tests' experiments: each changes its own column
    dvc(repo, "exp", "run", "-n", "shift05-lam1", "-S", "post.shift_05.lambda=1")
    wide = {"COLUMNS": "200"}
    views = {
        "metrics show": ["metrics", "show"],
        "metrics diff": ["metrics", "diff"],
        "exp show": [*shlex.split(EXP_SHOW)[1:], "--no-pager"],
    }
    for name, args in views.items():
        out = run([sys.executable, "-m", "dvc", *args], repo, env=wide).stdout
        lines = out.splitlines()
        assert len(lines) >= 3, (name, out)
        too_wide = [line for line in lines if len(line.rstrip()) > 200]
        assert not too_wide and "…" not in out, (name, out)
    shown = run([sys.executable, "-m", "dvc", *views["exp show"]], repo, env=wide).stdout
    assert "shift05-lam1" in shown and "post.shift_05.lambda" in shown, shown
    assert "metrics/shift_05.json:NFaiRR@10" in shown and "Created" not in shown, shown
    metrics = run([sys.executable, "-m", "dvc", "metrics", "show"], repo, env=wide).stdout
    assert "dvclive" not in metrics and "metrics/shift_05.json" in metrics, metrics
    assert EXP_SHOW in (ROOT / "README.md").read_text(encoding="utf-8")  # the one documented


RETURN = ("git checkout HEAD -- params.yaml dvc.lock metrics dvclive plots && "
          "git clean -fdq -- metrics dvclive plots && dvc checkout --force")
"""The README's return to the committed default after the quick run (issue 41)."""


def test_return_to_default_after_a_quick_run(tiny_repo: Path, tmp_path: Path, dvc: Dvc) -> None:
    """A quick run of two methods (one seed instead of none, fewer queries and steps)
    changes params.yaml, dvc.lock, the metrics, DVCLive's files (a seed-1/ folder in place
    of the fold folders) and the cached outputs; the README's command returns to HEAD:
    `git status` and `dvc status` clean."""
    repo = _head_copy(tiny_repo, tmp_path / "r", dvc)
    dvc(repo, "exp", "run", "-n", "quick", "-S", "train.max_steps=2", "-S", "train.seeds=[1]",
        "-S", "dataset.grep_biasir.max_queries=6", "evaluate@baseline",
        "evaluate@penalty_irrelevant")  # fmt: skip
    changed = run(["git", "status", "--porcelain"], repo).stdout
    assert "?? dvclive/baseline/plots/metrics/seed-1/" in changed and " M dvc.lock" in changed
    run(["bash", "-c", RETURN.replace("dvc ", f"{sys.executable} -m dvc ")], repo)
    assert run(["git", "status", "--porcelain"], repo).stdout == ""
    assert "Data and pipelines are up to date" in dvc(repo, "status").stdout
    assert RETURN in (ROOT / "README.md").read_text(encoding="utf-8")  # the one documented


def test_a_run_written_at_another_commit_is_byte_identical(
    tiny_repo: Path, tmp_path: Path, dvc: Dvc
) -> None:
    """A run's ir_metadata names the stage's code digest, not git's tree hashes or commit:
    retraining at a later commit whose change the stage does not run writes the same
    runs/ and models/ (dvc.lock's hashes unchanged), so a lock committed at one commit
    matches what the next commit's code writes (issue 41)."""
    repo = _head_copy(tiny_repo, tmp_path / "r", dvc)

    def outs() -> dict[str, str]:
        lock = yaml.safe_load((repo / "dvc.lock").read_text())
        return {o["path"]: o["md5"] for o in lock["stages"]["train@baseline"]["outs"]
                if o["path"].startswith(("runs/", "models/"))}  # fmt: skip

    before = outs()
    (repo / "pipeline" / "_unrelated.py").write_text('"""No stage imports this."""\n')
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "an unrelated change: new trees, new commit"], repo)
    dvc(repo, "repro", "-q", "params")
    meta = (repo / "runs/baseline/run.trec.ir_metadata.yaml").read_text()
    assert "data/code/train@baseline.txt" in meta and "tree" not in meta, meta
    dvc(repo, "repro", "-q", "-f", "-s", "train@baseline")  # retrained at the new commit
    assert outs() == before
