"""LIWC gender bias of a ranked list (SPEC §4.4), the lexicon-share measure reported by
Seyedsalehi et al. (EDBT 2022, "Bias-aware fair neural ranking for addressing stereotypical
gender biases") after the LIWC `female` / `male` categories (Pennebaker et al., LIWC2015).

Per document, `lex_f` / `lex_m` are the shares of female / male lexicon tokens among its
`n_words` (computed by the score stage with the user's LIWC dictionary or the open default
lexicon; `doc_scores.lexicon` records which). Per query:
`LIWC@k = |mean over ranks 1..min(k, len) of (lex_f − lex_m)| × 100`; the suite averages it
over all run queries. Ranked documents missing from `doc_scores` count as shares (0, 0) and
are counted per query in `liwc_missing_doc_scores` (within the top max(k)).
"""

from __future__ import annotations

import logging

import polars as pl

from pipeline.metrics.inputs import EvalInputs, finish, query_frame, require, top_k

log = logging.getLogger(__name__)

MISSING = "liwc_missing_doc_scores"


def liwc(ctx: EvalInputs, cutoffs: tuple[int, ...]) -> pl.DataFrame:
    """Per-query `LIWC@k` for every k, with the missing-document count."""
    shares = require(ctx, "doc_scores", "liwc").select(
        "doc_id",
        (pl.col("lex_f") - pl.col("lex_m")).alias("_diff"),
        pl.lit(0, pl.Int64).alias("_missing"),
    )
    ranked = top_k(ctx.run, max(cutoffs)).join(shares, on="doc_id", how="left")
    ranked = ranked.with_columns(pl.col("_diff").fill_null(0.0), pl.col("_missing").fill_null(1))
    values = ranked.group_by("query_id", maintain_order=True).agg(
        *(
            (pl.col("_diff").filter(pl.col("rank") <= k).mean().abs() * 100).alias(f"LIWC@{k}")
            for k in cutoffs
        ),
        pl.col("_missing").sum().alias(MISSING),
    )
    n_missing = int(values[MISSING].sum())
    if n_missing:
        log.warning("LIWC: %d ranked documents missing from doc_scores count as (0, 0)", n_missing)
    return finish(query_frame(ctx.run), values, [MISSING])
