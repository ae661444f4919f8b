"""LIWC gender bias of a ranked list (SPEC §4.4), the lexicon-share measure reported by
Seyedsalehi et al. (EDBT 2022, "Bias-aware fair neural ranking for addressing stereotypical
gender biases") after the LIWC `female` / `male` categories (Pennebaker et al., LIWC2015).

Per document, `lex_f` / `lex_m` are the shares of female / male lexicon tokens among its
`n_words` (computed by the score stage with the user's LIWC dictionary or the open default
lexicon; `doc_scores.lexicon` records which). Per query:
`LIWC@k = |mean over ranks 1..min(k, len) of (lex_f − lex_m)| × 100`; the suite averages it
over all run queries. The mean is a sum with weight `1/k'` (`k' = min(k, len)`) per rank,
and tied documents (equal scores) share the mean weight of the positions their block occupies
(`pipeline.ties`, SPEC §1 "Ties"), so the mean is its expectation over the orders of
each tie block. Ranked documents missing from `doc_scores` count as shares (0, 0) and are
counted per query in `liwc_missing_doc_scores` (documents with a non-zero weight at max(k)).
"""

from __future__ import annotations

import logging

import polars as pl

from pipeline.metrics.common import Measure, Metric
from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require
from pipeline.ties import mean_weight, tie_averaged

log = logging.getLogger(__name__)

MISSING = "liwc_missing_doc_scores"


def liwc(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per-query `LIWC@k` for every k, with the missing-document count."""
    shares = require(ctx, "doc_scores", "liwc").select(
        "doc_id",
        (pl.col("lex_f") - pl.col("lex_m")).alias("_diff"),
        pl.lit(0, pl.Int64).alias("_missing"),
    )
    weights = {f"_w{k}": mean_weight(k) for k in cutoffs}
    ranked = tie_averaged(ctx.run, weights, max(cutoffs))
    ranked = ranked.join(shares, on="doc_id", how="left", maintain_order="left")
    ranked = ranked.with_columns(pl.col("_diff").fill_null(0.0), pl.col("_missing").fill_null(1))
    values = ranked.group_by("query_id", maintain_order=True).agg(
        *(
            ((pl.col("_diff") * pl.col(f"_w{k}")).sum().abs() * 100).alias(f"LIWC@{k}")
            for k in cutoffs
        ),
        pl.col("_missing").sum().alias(MISSING),
    )
    n_missing = int(values[MISSING].sum())
    if n_missing:
        log.warning("LIWC: %d ranked documents missing from doc_scores count as (0, 0)", n_missing)
    return finish(query_frame(ctx.run), values, [MISSING])


RECORD = Metric(
    "liwc",
    liwc,
    (
        Measure("LIWC@{k}", "↓", "|female − male lexicon share| of the top k × 100",
                lo=0.0, hi=100.0, table="core", ir_measures="LIWC", transfer=True,
                headline=True, report=(("findings", 4),)),
    ),
    reference="Seyedsalehi et al., EDBT 2022 (after LIWC2015's female/male categories)",
    order=40,
)  # fmt: skip
