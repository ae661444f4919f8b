"""Stage `score`: Ψ columns, neutrality ζ and lexicon shares of every document; query complexity."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, schemas
from pipeline.bias.complexity import query_complexity
from pipeline.bias.lexicon import default_lexicon, load_liwc_dic, load_wordlist
from pipeline.bias.scoring import score_documents
from stages.common import run_stage, setup

log = logging.getLogger("stages.score")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    p = ns.params.score
    specific = load_wordlist(p.wordlist_specific, key="score.wordlist_specific")
    representative = load_wordlist(p.wordlist_representative, key="score.wordlist_representative")
    lexicon = load_liwc_dic(p.liwc_dic) if p.liwc_dic else default_lexicon()
    corpus = io.read_table("data/corpus.parquet", schemas.CORPUS)
    scores = score_documents(
        corpus, specific, representative, lexicon, tokenizer=p.tokenizer, tau=p.neutrality_tau
    )
    io.write_table(scores, "data/doc_scores.parquet", schemas.DOC_SCORES)
    queries = io.read_table("data/queries.parquet", schemas.QUERIES)
    complexity = query_complexity(queries)
    io.write_table(complexity.to_arrow(), "data/query_complexity.parquet", _complexity_schema(complexity))
    log.info(
        "score: %d documents (tokenizer %s, lexicon %s), %d queries' complexity",
        scores.height,
        p.tokenizer,
        lexicon.name,
        complexity.height,
    )


def _complexity_schema(df: object) -> schemas.Schema:
    import polars as pl

    assert isinstance(df, pl.DataFrame)
    extra = {c: schemas.F64 for c in df.columns if c not in ("query_id", "bin", "complexity")}
    return schemas.Schema(
        "query complexity",
        {"query_id": schemas.STR, "complexity": schemas.F64, "bin": schemas.STR},
        extra,
        unique=("query_id",),
    )


if __name__ == "__main__":
    run_stage(main)
