"""Stage `transfer_data`: the held-out transfer collection (`transfer.name`, a data source
without training data, e.g. the shipped GenderBias-QA; its section `dataset.<name>`) as
evaluation tables: `data/transfer/{corpus,queries,qrels}.parquet`, its
BM25 candidates (top `candidates.top_k`, short lists filled as the main collection's) and the
Ψ/ζ/lexicon scores of its documents (`score` settings), and the gender words per F/M group
(`group_words.parquet`, a confound the report states: pipeline/bias/group_words.py);
`dataset.genderbias_qa.max_queries` keeps the first N questions. The
trained models rerank these candidates without ever training on them (pipeline/rerank.py,
evaluate stage)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, paths, schemas
from pipeline.bias.group_words import group_words, group_words_line
from pipeline.bias.lexicon import load_lexicon, load_wordlist
from pipeline.bias.scoring import score_documents
from pipeline.data import get_source
from pipeline.data.common import check_extracted
from pipeline.retrieval.bm25 import bm25_topk
from pipeline.retrieval.folds import fill
from stages.common import run_stage, setup

log = logging.getLogger("stages.transfer_data")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    t, c, s = ns.params.transfer, ns.params.candidates, ns.params.score
    cfg = ns.params.dataset.config_of(t.name)
    coll = get_source(t.name).fn(cfg)  # its own tables, no folds: every query is a test query
    check_extracted(coll, f"transfer source {t.name!r}")  # no query or document without text
    judged = dict(coll.qrels.group_by("query_id").agg("doc_id").iter_rows())
    cands = bm25_topk(coll.corpus, coll.queries, k=c.top_k, k1=c.k1, b=c.b)
    cands = fill(cands, coll.queries, coll.corpus["doc_id"], judged, c.top_k, c.fill_seed)
    specific = load_wordlist(s.wordlist_specific, key="score.wordlist_specific")
    representative = load_wordlist(s.wordlist_representative, key="score.wordlist_representative")
    lexicon = load_lexicon(s.liwc_dic, key="score.liwc_dic")
    scores = score_documents(coll.corpus, specific, representative, lexicon,
                             tokenizer=s.tokenizer, tau=s.neutrality_tau)  # fmt: skip
    io.write_table(coll.corpus, paths.transfer_table("corpus"), schemas.CORPUS)
    io.write_table(coll.queries, paths.transfer_table("queries"), schemas.QUERIES)
    io.write_table(coll.qrels, paths.transfer_table("qrels"), schemas.QRELS)
    io.write_table(cands.sort("query_id", "rank"), paths.transfer_table("candidates"),
                   schemas.CANDIDATES)  # fmt: skip
    io.write_table(scores, paths.transfer_table("doc_scores"), schemas.DOC_SCORES)
    words = group_words(coll.corpus, scores, coll.qrels)
    io.write_table(words, paths.transfer_table("group_words"), schemas.GROUP_WORDS)
    log.info("transfer_data: %s", group_words_line(words))
    log.info("transfer_data: %s (%s): %d queries, %d documents, %d candidates",
             t.name, cfg, coll.queries.height, coll.corpus.height,
             cands.height)  # fmt: skip


if __name__ == "__main__":
    run_stage(main)
