"""Stage `score`: Ψ columns, neutrality ζ and lexicon shares of every document; query complexity."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, paths, schemas
from pipeline.bias.complexity import query_complexity
from pipeline.bias.lexicon import load_lexicon, load_wordlist
from pipeline.bias.scoring import score_documents
from pipeline.bias.syntax import load_parser
from stages.common import run_stage, setup

log = logging.getLogger("stages.score")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    p = ns.params.score
    specific = load_wordlist(p.wordlist_specific, key="score.wordlist_specific")
    representative = load_wordlist(p.wordlist_representative, key="score.wordlist_representative")
    lexicon = load_lexicon(p.liwc_dic, key="score.liwc_dic")
    corpus = io.read_table(paths.CORPUS, schemas.CORPUS)
    scores = score_documents(
        corpus, specific, representative, lexicon, tokenizer=p.tokenizer, tau=p.neutrality_tau
    )
    io.write_table(scores, paths.DOC_SCORES, schemas.DOC_SCORES)
    queries = io.read_table(paths.QUERIES, schemas.QUERIES)
    parser = load_parser(p.complexity_parser) if p.complexity_parser else None
    complexity = query_complexity(queries, parse=parser)
    io.write_table(complexity, paths.QUERY_COMPLEXITY, schemas.QUERY_COMPLEXITY)
    log.info(
        "score: %d documents (tokenizer %s, lexicon %s), %d queries' complexity",
        scores.height,
        p.tokenizer,
        lexicon.name,
        complexity.height,
    )


if __name__ == "__main__":
    run_stage(main)
