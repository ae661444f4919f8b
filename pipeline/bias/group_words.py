"""Gender words per document group: a confound check of a collection with F/M(/N) groups.

Losses that penalise gender words (Ψ) or reward neutrality (ζ) push down whichever group's
documents carry more of them, whatever their relevance. On GenderBias-QA (issue 29) the
female answers carry more gender-definitional words than the male answers of the same
question on most questions, so a method that ranks them lower may do so by construction.
``group_words`` measures this per group of a collection's judged documents (its qrels rows),
with the Ψ/ζ scores of the ``score`` settings (``doc_scores``: ``tc_f``, ``tc_m``,
``neutrality``):

- ``documents``, ``queries``: the group's judged documents and the queries that judge one;
- ``gender_words``: mean count of gender-definitional words per document (``tc_f + tc_m``),
  ``female_words`` / ``male_words`` the two parts;
- ``neutral_share``: share of its documents with ζ = 1 (NFaiRR's neutral documents);
- ``queries_more``: queries on which its documents carry more gender words (mean per
  document) than the documents of each other group the query judges.
"""

from __future__ import annotations

import polars as pl

from pipeline import schemas
from pipeline.errors import InputError


def group_words(
    corpus: pl.DataFrame, doc_scores: pl.DataFrame, qrels: pl.DataFrame
) -> pl.DataFrame:
    """One row per ``group`` of ``corpus`` (``schemas.GROUP_WORDS``); see the module docstring.
    Documents without a group label, or without scores, are left out."""
    if "group" not in corpus.columns:
        raise InputError(
            f"group words: the corpus has no `group` column (columns {corpus.columns}); only a "
            "collection with F/M/N document groups (Grep-BiasIR, GenderBias-QA) has them"
        )
    words = (pl.col("tc_f") + pl.col("tc_m")).cast(pl.Float64).alias("words")
    docs = (
        corpus.select("doc_id", "group").filter(pl.col("group").is_in(["F", "M", "N"]))
        .join(doc_scores.select("doc_id", "tc_f", "tc_m", "neutrality", words), on="doc_id")
    )  # fmt: skip
    judged = qrels.select("query_id", "doc_id").join(docs, on="doc_id")
    per_query = judged.group_by("query_id", "group").agg(pl.col("words").mean())
    # a group is "more" on a query when its mean beats every other group's mean there
    others = per_query.join(per_query, on="query_id", suffix="_other").filter(
        pl.col("group") != pl.col("group_other")
    )
    beats = others.group_by("query_id", "group").agg(
        (pl.col("words") > pl.col("words_other")).all().alias("more")
    )
    stats = docs.filter(pl.col("doc_id").is_in(judged["doc_id"].implode())).group_by("group").agg(
        pl.len().cast(pl.Int64).alias("documents"),
        pl.col("words").mean().alias("gender_words"),
        pl.col("tc_f").cast(pl.Float64).mean().alias("female_words"),
        pl.col("tc_m").cast(pl.Float64).mean().alias("male_words"),
        (pl.col("neutrality") >= 1.0).cast(pl.Float64).mean().alias("neutral_share"),
    )
    counts = per_query.join(beats, on=["query_id", "group"], how="left").group_by("group").agg(
        pl.len().cast(pl.Int64).alias("queries"),
        pl.col("more").fill_null(False).sum().cast(pl.Int64).alias("queries_more"),
    )
    out = stats.join(counts, on="group").sort("group")
    return out.select(list(schemas.GROUP_WORDS.required))


def group_words_line(table: pl.DataFrame, groups: tuple[str, str] = ("F", "M")) -> str:
    """One sentence for the report: the two groups' gender words per document, on how many
    queries each carries more, and the neutral shares (``group_words``'s table)."""
    rows = {r["group"]: r for r in table.iter_rows(named=True)}
    a, b = (rows.get(g) for g in groups)
    if a is None or b is None:
        return ""
    return (
        f"Gender-definitional words per judged document: {a['gender_words']:.2f} in the "
        f"{groups[0]} documents, {b['gender_words']:.2f} in the {groups[1]} ones; more in "
        f"{groups[0]} on {a['queries_more']} of {a['queries']} queries, more in {groups[1]} on "
        f"{b['queries_more']}; neutral (ζ = 1): {a['neutral_share']:.1%} of {groups[0]}, "
        f"{b['neutral_share']:.1%} of {groups[1]} (`group_words.parquet`, "
        "pipeline/bias/group_words.py)."
    )
