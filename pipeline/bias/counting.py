"""Vectorised per-document word counting for the gender scores (SPEC §2, §4.4).

The counting behind Ψ (Rekabsaz & Schedl 2020, SIGIR), ζ (Rekabsaz, Kopeinik & Schedl 2021,
SIGIR) and the LIWC gender shares (Bigdeli et al. 2022, EDBT), without a Python loop per
document: each slice of the corpus is tokenised by polars (on the streaming engine, which
can tokenise parts of the slice in parallel), the tokens are exploded into one long
``(i, tok)`` table, filtered with one hash ``is_in`` (plus one anchored regex for wildcard
prefixes) against all words of interest, and the few surviving rows are counted per
document and group with one ``group_by``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from pipeline.bias.lexicon import Lexicon
from pipeline.bias.tokenize import Tokenizer, count_nonempty, lowercase, words_split

_WORD_ONLY = re.compile(r"\w+")


@dataclass(frozen=True)
class Group:
    """A named word group: exact words and (LIWC-style) prefixes, all lowercase."""

    name: str
    exact: frozenset[str]
    prefixes: tuple[str, ...] = ()

    def hit(self) -> pl.Expr:
        """Whether column ``tok`` belongs to the group."""
        return _hit(self.exact, self.prefixes)


def _hit(exact: frozenset[str], prefixes: tuple[str, ...]) -> pl.Expr:
    """``tok`` is one of ``exact`` or starts with one of ``prefixes``."""
    hit = pl.col("tok").is_in(pl.Series(sorted(exact), dtype=pl.String).implode())
    # Only \w prefixes can start a \w+ token, and they need no regex escaping.
    usable = [p for p in prefixes if _WORD_ONLY.fullmatch(p)]
    if usable:
        hit = hit | pl.col("tok").str.contains("^(?:" + "|".join(usable) + ")")
    return hit


def lexicon_groups(lexicon: Lexicon) -> tuple[Group, Group]:
    """The ``lex_count_f`` / ``lex_count_m`` groups of a lexicon."""
    female, male = (Group(f"lex_count_{g}", lexicon.exact(g), lexicon.prefixes(g)) for g in "fm")
    return female, male


def count_groups(tokens: pl.LazyFrame, groups: tuple[Group, ...]) -> pl.LazyFrame:
    """Per row ``i`` of ``tokens`` (``i``, list column ``tok``): Int64 hits of each group.

    Rows without any hit are absent from the result.
    """
    exact = frozenset().union(*(g.exact for g in groups))
    prefixes = tuple(sorted({p for g in groups for p in g.prefixes}))
    hits = tokens.explode("tok").filter(_hit(exact, prefixes))
    flags = hits.select("i", *(g.hit().cast(pl.Int64).alias(g.name) for g in groups))
    return flags.group_by("i").agg(pl.col(g.name).sum() for g in groups)


def tokenise(docs: pl.DataFrame, tok: Tokenizer) -> pl.DataFrame:
    """``i``, ``doc_id``, list tokens ``tok``, ``\\w+`` tokens ``words`` and ``n_words``.

    Token lists may hold empty strings (they match no word); ``n_words`` does not count them.
    """
    lower = pl.col("lower")
    shared = tok.split is words_split
    exprs = [tok.split(lower).alias("tok")] + (
        [] if shared else [words_split(lower).alias("words")]
    )
    plan = (
        docs.lazy()
        .with_row_index("i")
        .select("i", "doc_id", lowercase(pl.col("text")).alias("lower"))
        .select("i", "doc_id", *exprs)
    )
    if shared:
        plan = plan.with_columns(pl.col("tok").alias("words"))
    plan = plan.with_columns(count_nonempty(pl.col("words")).alias("n_words"))
    return plan.collect(engine="streaming")


def count_batch(
    docs: pl.DataFrame, tok: Tokenizer, lists: tuple[Group, ...], lexicon: Lexicon
) -> pl.DataFrame:
    """Counts for one slice of ``doc_id`` / ``text`` rows, in row order.

    Columns: ``doc_id``, ``n_words``, one Int64 count per group of ``lists`` (among ``tok``
    tokens) and ``lex_count_f`` / ``lex_count_m`` (``\\w+`` tokens matching ``lexicon``).
    """
    lex = lexicon_groups(lexicon)
    tokens = tokenise(docs, tok).lazy()
    words = tokens.select("i", pl.col("words").alias("tok"))
    counts = [g.name for g in (*lists, *lex)]
    list_counts = count_groups(tokens.select("i", "tok"), lists)
    return (
        tokens.select("i", "doc_id", "n_words")
        .join(list_counts, on="i", how="left")
        .join(count_groups(words, lex), on="i", how="left")
        .with_columns(pl.col(*counts).fill_null(0))
        .sort("i")  # joins need not keep row order
        .drop("i")
        .collect()
    )
