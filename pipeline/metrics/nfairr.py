"""NFaiRR: normalised fairness of retrieval results (Rekabsaz, Kopeinik & Schedl, SIGIR 2021,
"Societal biases in retrieved contents: measurement framework and adversarial mitigation for
BERT rankers"), SPEC §4.3 and §1 "Ties".

With position weight `p(r) = 1 / log2(r + 1)` and document neutrality ζ (`neutrality`):

- `FaiRR_q@k  = Σ_{r <= min(k, len)} ζ(d_r) p(r)` over the run, where tied documents (equal
  scores) share the mean weight of the positions their block occupies (0 past k;
  `pipeline.ties`), so FaiRR is its expectation over the orders of each tie block;
- `IFaiRR_q@k` = the same sum over the query's background set (its `candidates`) sorted by ζ
  descending, top min(k, len(background)) (the maximum, so ties in ζ cannot change it);
- `NFaiRR@k   = FaiRR_q@k / IFaiRR_q@k`, higher is fairer (it can exceed 1 when the run
  holds documents outside the background set).

A document missing from `doc_scores` counts ζ = 1 (per-query counts `nfairr_missing_zeta`
for ranked documents with a non-zero weight at max(k), `nfairr_background_missing_zeta` for
background ones). A query whose IFaiRR is 0 (no background, or all background ζ = 0) gets null and
`nfairr_skipped` = 1; the suite averages NFaiRR over the remaining queries.
"""

from __future__ import annotations

import logging

import polars as pl

from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require
from pipeline.ties import cut, log_discount, tie_averaged

log = logging.getLogger(__name__)

MISSING = "nfairr_missing_zeta"
BACKGROUND_MISSING = "nfairr_background_missing_zeta"
SKIPPED = "nfairr_skipped"


def nfairr(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per-query `NFaiRR@k` for every k, with the missing-ζ and skipped-query counts."""
    zeta = require(ctx, "doc_scores", "nfairr").select("doc_id", "neutrality")
    background = require(ctx, "candidates", "nfairr").join(
        ctx.run.select("query_id").unique(), on="query_id", how="semi"
    )
    weights = {f"_w{k}": cut(k, log_discount) for k in cutoffs}
    ranked = _with_zeta(tie_averaged(ctx.run, weights, max(cutoffs)), zeta)
    ideal = _with_zeta(background, zeta).sort(
        ["query_id", "neutrality", "doc_id"], descending=[False, True, False]
    )
    # Sorted by ζ, so the sum is the maximum: ties in ζ cannot change it, no averaging needed.
    ideal = ideal.with_columns(
        pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"),
        pl.len().over("query_id").alias("_n"),
    )
    rank, n = ideal["rank"].to_numpy(), ideal["_n"].to_numpy()
    ideal = ideal.with_columns(
        pl.Series(name, fn(rank, n), dtype=pl.Float64) for name, fn in weights.items()
    )
    out = finish(query_frame(ctx.run), _sums(ranked, cutoffs, "fairr", MISSING), [MISSING])
    out = finish(out, _sums(ideal, cutoffs, "ifairr", BACKGROUND_MISSING), [BACKGROUND_MISSING])
    # zeta >= 0 and the ideal list is sorted by zeta, so IFaiRR@k = 0 for one k iff for all k.
    skipped = pl.col(f"ifairr@{max(cutoffs)}").fill_null(0.0) == 0
    out = out.with_columns(
        skipped.cast(pl.Int64).alias(SKIPPED),
        *(
            pl.when(~skipped)
            .then(pl.col(f"fairr@{k}") / pl.col(f"ifairr@{k}"))
            .alias(f"NFaiRR@{k}")
            for k in cutoffs
        ),
    )
    _log_counts(out)
    metrics = [f"NFaiRR@{k}" for k in cutoffs]
    return out.select("query_id", *metrics, MISSING, BACKGROUND_MISSING, SKIPPED)


def _with_zeta(rows: pl.DataFrame, zeta: pl.DataFrame) -> pl.DataFrame:
    """Attach ζ; documents missing from the score table get ζ = 1 and `_missing` = 1."""
    out = rows.join(
        zeta.with_columns(pl.lit(0, pl.Int64).alias("_missing")),
        on="doc_id",
        how="left",
        maintain_order="left",
    )
    return out.with_columns(pl.col("neutrality").fill_null(1.0), pl.col("_missing").fill_null(1))


def _sums(rows: pl.DataFrame, cutoffs: tuple[int, ...], prefix: str, count: str) -> pl.DataFrame:
    """Per query, `{prefix}@k = Σ ζ · w_k` over `rows` (weight columns `_w{k}`) and the
    missing-ζ `count` over all of `rows`."""
    return rows.group_by("query_id", maintain_order=True).agg(
        *((pl.col("neutrality") * pl.col(f"_w{k}")).sum().alias(f"{prefix}@{k}") for k in cutoffs),
        pl.col("_missing").sum().alias(count),
    )


def _log_counts(out: pl.DataFrame) -> None:
    for col, what in (
        (MISSING, "ranked documents missing from doc_scores count zeta = 1"),
        (BACKGROUND_MISSING, "background documents missing from doc_scores count zeta = 1"),
        (SKIPPED, "queries skipped: IFaiRR = 0 (no background set or all zeta = 0)"),
    ):
        n = int(out[col].sum())
        if n:
            log.warning("NFaiRR: %d %s", n, what)


RECORD = Metric(
    "nfairr",
    nfairr,
    (
        Measure("NFaiRR@{k}", "↑", "neutrality of the top k, normalised by the background's ideal",
                lo=0.0, hi=1.0, table="core", ir_measures="NFaiRR", transfer=True, headline=True,
                tradeoff=(1, "nfairr"), report=(("findings", 2), ("controls", 0), ("judged", 2))),
    ),
    reference="Rekabsaz, Kopeinik & Schedl, SIGIR 2021 (NFaiRR)",
    order=30,
)  # fmt: skip
