"""Run one pipeline stage on the rehearsal source (what ``run`` starts in a fresh process).

    python -m benchmarks.rehearsal.stage --source SRC [--train-cand-queries N] stages.extract

The stage's own ``main`` runs in the current folder (its ``params.yaml`` and ``data/``), with
these additions, none of which changes what the stage computes:

- ``extract``: ``ir_datasets.load`` is the generated source (``benchmarks.rehearsal.source``),
  and the download pre-flight check is skipped;
- ``--train-cand-queries N`` (``candidates``): BM25 training candidates for a seeded sample of
  N training queries instead of all of them; their cost is a fixed part (tokenise and index
  the corpus) plus a part linear in the number of queries (each scores and sorts the whole
  corpus), recorded apart so that ``run`` projects the full figure (leave the flag out to
  run them all);
- ``--synthetic-groups`` (``evaluate``): F/M/N document groups from Ψ, so that AWRF and the
  counterfactual gap (Grep-BiasIR families) run at this size too (timing only);
- phase timers (``rehearsal_phases/<name>.json``): artifact reads and writes, the MS MARCO
  loader's steps, bm25s' index build and per-query scoring, each metric family, and the
  peak RSS after each, so a slow or large stage says where its time and memory go.

The module imports only what the stage itself imports (no torch for the data stages).
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import importlib
import json
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

PHASES: dict[str, float] = defaultdict(float)
COUNTS: dict[str, int] = defaultdict(int)
EXTRA: dict[str, Any] = {}


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` adding its wall time to ``PHASES[name]`` and its calls to ``COUNTS[name]``."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            PHASES[name] += time.perf_counter() - start
            COUNTS[name] += 1
            EXTRA[f"peak_rss_mib_after_{name}"] = _peak_mib()

    return wrapper


def patch_source(source: Path) -> None:
    """``extract`` reads the generated source instead of ir_datasets' cache."""
    from benchmarks.rehearsal.source import loader
    from pipeline.data import msmarco

    msmarco.default_loader = lambda: loader(source)
    msmarco.preflight = lambda *a, **k: None


def wrap_all(module: Any, names: Sequence[str], prefix: str = "") -> None:
    """Phase timers on the module-level functions ``names`` of ``module`` (called through the
    module, so the stage's own calls go through the timer)."""
    for name in names:
        if hasattr(module, name):
            setattr(module, name, timed(prefix + name, getattr(module, name)))


def patch_timers(stage: str) -> None:
    """Phase timers of the stage: reads and writes of artifacts everywhere; the functions
    where each stage spends its time."""
    from pipeline import io

    wrap_all(io, ["read_table", "write_table"], "io.")
    if stage in ("stages.extract", "stages.candidates"):
        import bm25s

        from pipeline.retrieval import bm25

        bm25s.BM25.index = timed("bm25s.index", bm25s.BM25.index)
        bm25.top_k_frame = timed("bm25.top_k_frame (BM25 top-k)", bm25.top_k_frame)
    if stage == "stages.extract":
        from pipeline.data import msmarco

        names = ["msmarco_tables", "extract_msmarco", "dev_qrels", "candidates",
                 "bm25_over_docs", "write_triples", "train_queries", "_needed_docs",
                 "write_corpus"]  # fmt: skip
        wrap_all(msmarco, names, "msmarco.")
    if stage == "stages.evaluate":
        from pipeline.metrics import METRICS, runner

        for name, record in list(METRICS.items()):
            METRICS[name] = dataclasses.replace(record, fn=timed(f"metric.{name}", record.fn))
        wrap_all(runner, ["read_shared", "read_runs", "evaluate_run", "write_eval"], "runner.")


def patch_stage_module(module: Any) -> None:
    """Timers on what the stage module imported by name."""
    names = ["extract", "score_documents", "query_complexity", "candidates", "apply_ordering",
             "psi_profile", "load_lexicon", "load_wordlist"]  # fmt: skip
    wrap_all(module, names, "stage.")


def patch_train_sample(n: int, seed: int = 0) -> None:
    """Training candidates for a seeded sample of ``n`` training queries (see the docstring).

    Records the training side's fixed cost (until its first query is scored: tokenising and
    indexing the corpus) apart from its per-query cost, the rows and their in-memory size."""
    import polars as pl

    from pipeline.retrieval import bm25, folds

    original = folds.fold_candidates
    top_k = bm25.top_k_frame
    first: list[float] = []

    def top_k_frame(*args: Any, **kwargs: Any) -> Any:
        if not first:
            first.append(time.perf_counter())
        return top_k(*args, **kwargs)

    def sampled(
        corpus: Any,
        queries: Any,
        fold: int,
        test: bool,
        p: Any,
        k: int | None = None,
        judged: Any = None,
    ) -> Any:
        start = time.perf_counter()
        if not test:
            in_fold = pl.col("fold").eq_missing(fold)
            train = queries.filter(~in_fold)
            EXTRA["train_queries_total"] = EXTRA.get("train_queries_total", 0) + train.height
            if train.height > n:
                train = train.sample(n, seed=seed)
            EXTRA["train_queries_run"] = EXTRA.get("train_queries_run", 0) + train.height
            queries = pl.concat([queries.filter(in_fold), train])
            first.clear()
            bm25.top_k_frame = top_k_frame
        try:
            out = original(corpus, queries, fold, test, p, k, judged)
        finally:
            bm25.top_k_frame = top_k
        end = time.perf_counter()
        side = "test" if test else "train"
        PHASES[f"fold_candidates.{side}"] += end - start
        if not test and first:
            PHASES["fold_candidates.train.fixed"] += first[0] - start
            PHASES["fold_candidates.train.queries"] += end - first[0]
        EXTRA[f"{side}_rows"] = EXTRA.get(f"{side}_rows", 0) + out.height
        EXTRA[f"{side}_bytes_in_memory"] = EXTRA.get(f"{side}_bytes_in_memory", 0) + int(
            out.estimated_size()
        )
        EXTRA[f"peak_rss_mib_after_fold_candidates_{side}"] = _peak_mib()
        return out

    folds.fold_candidates = sampled


def patch_synthetic_groups() -> None:
    """F/M/N document groups from Ψ (tc_f > tc_m: F; tc_m > tc_f: M; else N), so that the
    families needing groups (AWRF, counterfactual gap) run on MS MARCO too (timing only)."""
    import polars as pl

    from pipeline.metrics import runner

    original = runner.read_shared

    def read_shared(*args: Any, **kwargs: Any) -> Any:
        shared = original(*args, **kwargs)
        s = shared.doc_scores
        group = (
            pl.when(pl.col("tc_f") > pl.col("tc_m"))
            .then(pl.lit("F"))
            .when(pl.col("tc_m") > pl.col("tc_f"))
            .then(pl.lit("M"))
            .otherwise(pl.lit("N"))
        )
        groups = s.select("doc_id", group.alias("group"))
        return dataclasses.replace(shared, groups=groups)

    runner.read_shared = read_shared


def write_phases(name: str) -> None:
    out = Path("rehearsal_phases") / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    body = {"seconds": dict(PHASES), "calls": dict(COUNTS), **EXTRA, "peak_rss_mib": _peak_mib()}
    out.write_text(json.dumps(body, indent=2) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--source", type=Path, required=True, help="folder written by generate")
    p.add_argument("--train-cand-queries", type=int, default=None)
    p.add_argument("--synthetic-groups", action="store_true", help="evaluate: F/M/N from Ψ")
    p.add_argument("--name", default=None, help="name of the phases file (default: module)")
    p.add_argument("module", help="stage module, e.g. stages.extract")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the stage's own arguments")
    ns = p.parse_args(argv)
    args = [a for a in ns.args if a != "--"]
    name = ns.name or ns.module.rsplit(".", 1)[-1]
    if ns.module == "stages.extract":
        patch_source(ns.source.resolve())
    patch_timers(ns.module)
    if ns.module == "stages.candidates" and ns.train_cand_queries:
        patch_train_sample(ns.train_cand_queries)
    if ns.synthetic_groups:
        patch_synthetic_groups()
    atexit.register(write_phases, name)
    stage = importlib.import_module(ns.module)
    patch_stage_module(stage)
    sys.argv = [ns.module, *args]
    stage.run_stage(stage.main)


if __name__ == "__main__":
    main()
