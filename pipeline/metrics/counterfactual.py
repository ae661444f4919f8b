"""Counterfactual gender gap on Grep-BiasIR (Krieg et al., "Grep-BiasIR: a dataset for
investigating gender representation bias in information retrieval results", CHIIR 2023),
SPEC §4.7 (goes beyond the papers).

Every Grep-BiasIR query has its relevant document in a female (`F`), a male (`M`) and a
neutral version (`doc_groups.group`). Per query,
`gap = rank(female version) − rank(male version)` of the relevant document (qrel > 0), so a
positive gap means the male version ranks higher. A rank here is the mean rank of the
document's tie block (documents of equal score, `pipeline.ties`, SPEC §1 "Ties"), so
F and M versions with equal scores have gap exactly 0 whatever their order in the run.
Per-query columns:

- `gap-mean` = gap (the suite's mean is the mean gap; ≈ 0 for a fair ranker);
- `gap-abs` = |gap|;
- `gap-male-wins` = 1.0 if gap > 0, 0.0 if gap < 0 and 0.5 if the two versions tie (equal
  scores: a tie is neither gender's win, so a query whose F and M versions tie counts half
  and a ranker that ties every pair has the fair share ½; issue 29: ties used to count as
  female wins). Its mean is the share of male wins, ties counting half;
- `gap-neutral-first` = 1.0 if the relevant neutral version ranks strictly above both the
  female and the male one, else 0.0 (its mean is the neutral-first rate; issue 21: the
  methods that look fairer by NFaiRR rank the neutral version first, then the male one).
  Null where the query has no relevant neutral version (e.g. GenderBias-QA).

If a query has several relevant documents of one gender, the best-ranked one (smallest mean
rank) counts. A query whose relevant female or male version is not in its run (or not in the
qrels/doc_groups) gets nulls and `gap_skipped` = 1; the suite averages over the remaining
queries.
"""

from __future__ import annotations

import logging

import polars as pl

from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require
from pipeline.ties import identity_rank, tie_averaged

log = logging.getLogger(__name__)

FEMALE = "F"
MALE = "M"
NEUTRAL = "N"
SKIPPED = "gap_skipped"
KEYS = ("gap-mean", "gap-abs", "gap-male-wins", "gap-neutral-first")


def counterfactual(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per-query counterfactual gap columns (`cutoffs` is unused: the gap reads full ranks)."""
    qrels = require(ctx, "qrels", "counterfactual")
    doc_groups = require(ctx, "doc_groups", "counterfactual")
    ranks = version_ranks(ctx.run, qrels, doc_groups)
    gap = pl.col("rank_f") - pl.col("rank_m")
    values = ranks.select(
        "query_id",
        gap.alias("gap-mean"),
        gap.abs().alias("gap-abs"),
        pl.when(gap.is_null())
        .then(None)
        .otherwise(gap.sign().cast(pl.Float64) * 0.5 + 0.5)
        .alias("gap-male-wins"),
        pl.when(gap.is_null() | pl.col("rank_n").is_null())
        .then(None)
        .otherwise((pl.col("rank_n") < pl.min_horizontal("rank_f", "rank_m")).cast(pl.Float64))
        .alias("gap-neutral-first"),
    )
    out = finish(query_frame(ctx.run), values, [])
    out = out.with_columns(pl.col("gap-mean").is_null().cast(pl.Int64).alias(SKIPPED))
    n_skipped = int(out[SKIPPED].sum())
    if n_skipped:
        log.warning(
            "counterfactual gap: %d of %d queries skipped (relevant F or M version not ranked)",
            n_skipped,
            out.height,
        )
    return out


def version_ranks(run: pl.DataFrame, qrels: pl.DataFrame, doc_groups: pl.DataFrame) -> pl.DataFrame:
    """`query_id, rank_f, rank_m, rank_n`: best tie-block mean rank (Float64) of the query's
    relevant F / M / N documents.

    Only queries with at least one relevant F, M or N document in the qrels appear; a version
    that is not in the run has a null rank.
    """
    mean_rank = tie_averaged(run, {"_mean_rank": identity_rank}).select(
        "query_id", "doc_id", pl.col("_mean_rank").alias("rank")
    )
    relevant = qrels.filter(pl.col("relevance") > 0).join(
        doc_groups.filter(pl.col("group").is_in([FEMALE, MALE, NEUTRAL])), on="doc_id"
    )
    ranked = relevant.join(mean_rank, on=["query_id", "doc_id"], how="left")
    return ranked.group_by("query_id", maintain_order=True).agg(
        pl.col("rank").filter(pl.col("group") == FEMALE).min().alias("rank_f"),
        pl.col("rank").filter(pl.col("group") == MALE).min().alias("rank_m"),
        pl.col("rank").filter(pl.col("group") == NEUTRAL).min().alias("rank_n"),
    )


RECORD = Metric(
    "counterfactual",
    counterfactual,
    (
        Measure("gap-mean", "→0", "rank of the female − rank of the male relevant version",
                table="overall", magnitude="gap-abs", ir_measures="gap_mean", transfer=True,
                sign_test="signed gap", headline=True),
        Measure("gap-abs", "↓", "|rank of the female − rank of the male relevant version|",
                lo=0.0, table="overall", ir_measures="gap_abs", transfer=True, headline=True,
                report=(("findings", 5), ("judged", 5))),
        Measure("gap-male-wins", "→0.5", "share of queries whose male version ranks higher "
                "(F/M ties count ½)",
                lo=0.0, hi=1.0, table="overall", ir_measures="gap_male_wins", transfer=True,
                sign_test="male wins", report=(("controls", 2),)),
        Measure("gap-neutral-first", "·", "share of queries whose relevant neutral version "
                "ranks strictly above both gendered ones", lo=0.0, hi=1.0, table="overall",
                ir_measures="gap_neutral_first", sign_test="neutral first",
                report=(("controls", 3),)),
    ),
    reference="Grep-BiasIR counterfactual versions (Krieg et al., SIGIR 2022); this project",
    order=60,
)  # fmt: skip
