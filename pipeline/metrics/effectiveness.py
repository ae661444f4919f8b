"""Effectiveness: MRR@k and nDCG@k (SPEC §4.1), computed by ranx (Bassani, ECIR 2022).

- `MRR@k`: reciprocal rank of the first document with qrel > 0 within the top k, else 0
  (Voorhees, TREC-8 QA track 1999).
- `nDCG@k`: graded, linear gain `rel / log2(r + 1)` (Järvelin & Kekäläinen, TOIS 2002), as
  ranx's `ndcg` and trec_eval compute it.

Both are averaged over **all** run queries: a query without any qrel > 0 scores 0 and is
flagged in the count column `n_queries_no_relevant`.

**Ties** (docs/decisions.md, "Ties in effectiveness metrics"): documents are ranked as
trec_eval ranks them (`form_res_rels.c`, `comp_sim_docno`): by score descending, equal scores
by document id descending (byte order, as `strcmp`), whatever their order in the run. So every
value here equals trec_eval's, pytrec_eval's and ir_measures' on the same run, and none
depends on how tied documents sit in a file. ranx's own `Run` differs only on queries where
tied documents straddle a relevant one: it sorts each query with numba's unstable quicksort,
whose tie order follows neither the file nor the ids.

ranx computes the values from that order, fed through its array interface (one row
`[doc code, -position]` per document, padded to a common length), so ranx cannot reorder the
run, and no per-query Python dicts are built (that costs seconds at 1,765 queries x 200
documents).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
import polars as pl

from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require
from pipeline.ties import trec_eval_order

log = logging.getLogger(__name__)

NO_RELEVANT = "n_queries_no_relevant"
_PAD_ID = -1.0  # never matches a document code (codes are >= 0)


def effectiveness(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per-query `MRR@k` and `nDCG@k` for every k, plus the 0/1 `n_queries_no_relevant` flag."""
    qrels = require(ctx, "qrels", "effectiveness")
    metrics = [f"mrr@{k}" for k in cutoffs] + [f"ndcg@{k}" for k in cutoffs]
    names = {f"mrr@{k}": f"MRR@{k}" for k in cutoffs} | {f"ndcg@{k}": f"nDCG@{k}" for k in cutoffs}
    values = ranx_per_query(ctx.run, qrels, metrics).rename(names)
    base = query_frame(ctx.run)
    out = finish(base, values, []).with_columns(pl.col(list(names.values())).fill_null(0.0))
    out = out.with_columns(
        (~pl.col("query_id").is_in(values["query_id"].implode())).cast(pl.Int64).alias(NO_RELEVANT)
    )
    n_none = int(out[NO_RELEVANT].sum())
    if n_none:
        log.warning(
            "%d of %d queries have no relevant qrel (> 0); they score 0", n_none, out.height
        )
    return out


def ndcg_per_query(run: pl.DataFrame, qrels: pl.DataFrame, cutoffs: Sequence[int]) -> pl.DataFrame:
    """`query_id` + `nDCG@k` for every run query (0 where the query has no relevant qrel)."""
    metrics = [f"ndcg@{k}" for k in cutoffs]
    values = ranx_per_query(run, qrels, metrics).rename(
        {m: f"nDCG@{k}" for m, k in zip(metrics, cutoffs, strict=True)}
    )
    cols = [f"nDCG@{k}" for k in cutoffs]
    return finish(query_frame(run), values, []).with_columns(pl.col(cols).fill_null(0.0))


def ranx_per_query(run: pl.DataFrame, qrels: pl.DataFrame, metrics: list[str]) -> pl.DataFrame:
    """`query_id` + one column per ranx metric name, for the run queries with a qrel > 0,
    with the run ranked as trec_eval ranks it (`trec_eval_order`)."""
    run = trec_eval_order(run)
    relevant = qrels.filter(pl.col("relevance") > 0).join(
        run.select("query_id").unique(), on="query_id", how="semi"
    )
    queries = relevant.select("query_id").unique().sort("query_id").with_row_index("qi")
    if queries.height == 0:
        return pl.DataFrame(schema={"query_id": pl.String} | dict.fromkeys(metrics, pl.Float64))
    codes = pl.concat([run.select("doc_id"), relevant.select("doc_id")]).unique()
    codes = codes.with_row_index("code")
    run_rows = run.join(queries, on="query_id").join(codes, on="doc_id")
    run_rows = run_rows.select(
        "qi",
        (pl.col("rank") - 1).alias("pos"),
        "code",
        (-pl.col("rank")).cast(pl.Float64).alias("value"),
    )
    rel_rows = relevant.join(queries, on="query_id").join(codes, on="doc_id")
    rel_rows = rel_rows.sort(["qi", "relevance"], descending=[False, True]).select(
        "qi",
        pl.int_range(pl.len()).over("qi").alias("pos"),
        "code",
        pl.col("relevance").cast(pl.Float64).alias("value"),
    )
    scores = _ranx_evaluate(
        _padded(rel_rows, queries.height), _padded(run_rows, queries.height), metrics
    )
    return queries.select("query_id").with_columns(
        pl.Series(m, np.asarray(scores[m], dtype=np.float64)) for m in metrics
    )


def _padded(rows: pl.DataFrame, n_queries: int) -> np.ndarray:
    """ranx's array layout: `[query, position, (doc code, value)]`, padded with unmatched ids.

    Padding rows are `(-1, 0)`: id -1 is never a document, so run padding never hits a qrel,
    and relevance 0 is below ranx's relevance level 1, so ranx drops qrels padding at once.
    """
    width = int(rows["pos"].max()) + 1  # type: ignore[arg-type]
    out = np.empty((n_queries, width, 2), dtype=np.float64)
    out[:, :, 0] = _PAD_ID
    out[:, :, 1] = 0.0
    qi = rows["qi"].to_numpy()
    pos = rows["pos"].to_numpy()
    out[qi, pos, 0] = rows["code"].to_numpy().astype(np.float64)
    out[qi, pos, 1] = rows["value"].to_numpy()
    return out


def _ranx_evaluate(qrels: np.ndarray, run: np.ndarray, metrics: list[str]) -> dict[str, np.ndarray]:
    """What `ranx.evaluate(qrels, run, metrics, return_mean=False, threads=<all>)` returns
    for arrays: each metric's kernel from `ranx.metrics.metric_switch`, on numba's threads
    (one for fewer than 10 queries, as ranx does). `ranx_metrics` loads the kernels."""
    import numba

    kernels = ranx_metrics()
    threads = 1 if len(qrels) < 10 else numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    numba.set_num_threads(threads)
    out = {}
    with warnings.catch_warnings():
        # ranx's compiled kernels warn about an internal uint64 -> int64 cast.
        warnings.simplefilter("ignore", numba.NumbaTypeSafetyWarning)
        for metric in metrics:
            name, _, k = metric.partition("@")
            out[metric] = np.asarray(kernels.metric_switch(name)(qrels, run, int(k or 0), 1))
    return out


def ranx_metrics() -> ModuleType:
    """ranx's metric kernels, `ranx.metrics`, without running `ranx/__init__.py` first.

    ranx's package `__init__` imports all of ranx: fusion, plots (matplotlib), statistical
    tests (scipy.stats) and its data structures (pandas, ir_datasets), ~3 s of every
    evaluate process for code this module never calls (benchmarks/README.md, "Time of the
    default run"); `ranx.metrics` imports only numba and numpy. So unless ranx is already
    imported, `ranx` is registered as a :class:`_LazyPackage`: its submodules import (and
    numba loads their cached kernels) without its `__init__`, which runs only when code
    reads a name it defines (`ranx.evaluate`, `from ranx import Qrels`): ranx whole, as
    usual. The numba threading layer is set as ranx's `__init__` sets it.
    """
    if "ranx" not in sys.modules:
        import numba

        spec = importlib.util.find_spec("ranx")
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            raise ModuleNotFoundError("ranx is not installed: pip install ranx (requirements.lock)")
        numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]
        package = importlib.util.module_from_spec(spec)
        package.__class__ = _LazyPackage
        sys.modules["ranx"] = package
    return importlib.import_module("ranx.metrics")


class _LazyPackage(ModuleType):
    """A package whose `__init__` runs at the first read of a name it has not got (the
    names its `__init__` defines); importing its submodules does not run it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self.__class__ = ModuleType  # type: ignore[assignment]  # an ordinary module now
        loader = self.__spec__.loader if self.__spec__ else None
        if loader is None:
            raise AttributeError(name)
        loader.exec_module(self)
        return getattr(self, name)


RECORD = Metric(
    "effectiveness",
    effectiveness,
    (
        Measure("MRR@{k}", "↑", "reciprocal rank of the first relevant document in the top k",
                lo=0.0, hi=1.0, fairness=False, table="core", ir_measures="RR", transfer=True,
                headline=True, report=(("findings", 0), ("controls", 4), ("judged", 0))),
        Measure("nDCG@{k}", "↑", "normalised discounted cumulative gain of the top k (graded)",
                lo=0.0, hi=1.0, fairness=False, table="extra", ir_measures="nDCG",
                transfer=True, headline=True, report=(("findings", 1), ("judged", 1))),
    ),
    reference="Voorhees, TREC-8 QA 1999 (MRR); Järvelin & Kekäläinen, TOIS 2002 (nDCG); ranx",
    order=10,
    ir_measures_native=True,
)  # fmt: skip
