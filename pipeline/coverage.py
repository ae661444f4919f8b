"""What part of a run's input can be evaluated: `fair-eval` checks it before computing anything.

A metric over incomplete input is not what it looks like. trec_eval's rule (evaluate the
queries that have both a ranking and judgments) reports MRR 0.91 for a run that answers 10 of
the 117 judged queries; a query of the run without qrels scores 0 and drags the mean down; a
document the corpus lacks, or whose text is empty, reads as a neutral document, so NFaiRR and
LIWC move towards "fair"; a query whose qrels judge nothing relevant has MRR 0 by definition.
Each such gap is counted over its own whole (:class:`Gap`):

- ``unranked``: queries of the qrels without a ranking in the run;
- ``unjudged``: queries of the run without qrels;
- ``no_relevant``: queries of the qrels none of whose judgments is relevant (all-zero qrels);
- ``unknown_docs``: documents in the run's top ``depth`` that the corpus lacks;
- ``empty_texts``: documents in the run's top ``depth`` whose text is empty.

The covered part (:func:`covered`) is the queries that have a ranking and a relevant
judgment, each ranking cut to the documents of the corpus with a text (ranks closed up), and
those queries' qrels: every metric is computed over it alone, never over a mix.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

GAP_KEYS = ("unranked", "unjudged", "no_relevant", "unknown_docs", "empty_texts")


@dataclass(frozen=True)
class Gap:
    """``count`` of ``total`` items of a kind (``what``) that cannot be evaluated."""

    key: str
    count: int
    total: int
    what: str
    first: str

    def __str__(self) -> str:
        return f"{self.count} of {self.total} {self.what} (first {self.first!r})"


@dataclass(frozen=True)
class Coverage:
    """The gaps of an input and the covered part's size: ``queries`` (with a ranking, a
    relevant judgment and a document of the corpus with a text) of ``all_queries`` (those of
    the run or of the qrels); ``docs`` (of the corpus, with a text) of ``all_docs`` (in the
    top ``depth`` of the queries with a ranking and a relevant judgment)."""

    gaps: tuple[Gap, ...]
    queries: int
    all_queries: int
    docs: int
    all_docs: int
    depth: int

    def shares(self) -> dict[str, float]:
        """``judged_queries`` and ``judged_docs``: the covered shares, only those below 1."""
        out = {}
        for key, part, whole in (("judged_queries", self.queries, self.all_queries),
                                 ("judged_docs", self.docs, self.all_docs)):  # fmt: skip
            if part < whole:
                out[key] = part / whole if whole else 0.0
        return out

    def line(self) -> str:
        """The coverage as one line (printed before the metrics of a partial evaluation)."""
        return (
            f"coverage: {self.queries} of {self.all_queries} queries "
            f"({_pct(self.queries, self.all_queries)}) have a ranking, a relevant judgment and "
            f"a document of the corpus; {self.docs} of the {self.all_docs} documents in the "
            f"top {self.depth} of the ranked and judged queries "
            f"({_pct(self.docs, self.all_docs)}) are in the corpus with a text; every metric "
            "below is over these only"
        )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "none"


def _first(frame: pl.DataFrame, column: str) -> str:
    return str(frame[column][0]) if frame.height else ""


def coverage(
    run: pl.DataFrame, qrels: pl.DataFrame, corpus: pl.DataFrame, depth: int
) -> Coverage:
    """The gaps of ``run`` (``query_id, doc_id, rank``) against ``qrels`` and ``corpus``
    (``doc_id, text``), and the size of the covered part (module docstring)."""
    ranked = run.select("query_id").unique(maintain_order=True)
    judged = qrels.group_by("query_id", maintain_order=True).agg(
        (pl.col("relevance") > 0).any().alias("relevant")
    )
    top = run.filter(pl.col("rank") <= depth).select("query_id", "doc_id")
    texts = corpus.select("doc_id", (pl.col("text").str.strip_chars() != "").alias("has_text"))
    docs = top.join(texts, on="doc_id", how="left")
    unranked = judged.join(ranked, on="query_id", how="anti")
    unjudged = ranked.join(judged, on="query_id", how="anti")
    no_relevant = judged.filter(~pl.col("relevant"))
    unknown = docs.filter(pl.col("has_text").is_null())
    empty = docs.filter(pl.col("has_text") == False)  # noqa: E712 (a polars expression)
    gaps = [
        Gap("unranked", unranked.height, judged.height,
            "queries of the qrels have no ranking in the run", _first(unranked, "query_id")),
        Gap("unjudged", unjudged.height, ranked.height,
            "queries of the run have no qrels", _first(unjudged, "query_id")),
        Gap("no_relevant", no_relevant.height, judged.height,
            "queries of the qrels judge no document relevant", _first(no_relevant, "query_id")),
        Gap("unknown_docs", unknown.height, top.height,
            f"documents in the run's top {depth} are not in the corpus", _first(unknown, "doc_id")),
        Gap("empty_texts", empty.height, top.height,
            f"documents in the run's top {depth} have an empty text", _first(empty, "doc_id")),
    ]  # fmt: skip
    kept = _covered_run(run, qrels, corpus)
    both = judged.filter(pl.col("relevant")).join(ranked, on="query_id", how="semi")
    both_top = docs.join(both, on="query_id", how="semi")
    every = pl.concat([ranked, judged.select("query_id")]).unique()
    return Coverage(
        tuple(g for g in gaps if g.count), kept["query_id"].n_unique(), every.height,
        both_top.filter(pl.col("has_text")).height, both_top.height, depth,
    )  # fmt: skip


def _covered_run(run: pl.DataFrame, qrels: pl.DataFrame, corpus: pl.DataFrame) -> pl.DataFrame:
    """The run cut to the covered part: queries with a relevant judgment, documents of the
    corpus with a text, ranks closed up in the run's order."""
    relevant = qrels.filter(pl.col("relevance") > 0).select("query_id").unique()
    texts = corpus.filter(pl.col("text").str.strip_chars() != "").select("doc_id")
    kept = run.join(relevant, on="query_id", how="semi").join(texts, on="doc_id", how="semi")
    kept = kept.sort("query_id", "rank", maintain_order=True)
    return kept.with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))


def covered(
    run: pl.DataFrame, qrels: pl.DataFrame, corpus: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(run, qrels)`` of the covered part (module docstring): what `--allow-partial`
    evaluates."""
    kept = _covered_run(run, qrels, corpus)
    queries = kept.select("query_id").unique()
    return kept, qrels.join(queries, on="query_id", how="semi")
