"""Stage `transfer_data`: the held-out transfer collection (`transfer.name`, e.g. the shipped
GenderBias-QA) as evaluation tables: `data/transfer/{corpus,queries,qrels}.parquet`, its
BM25 candidates (top `candidates.top_k`, short lists filled as the main collection's) and the
Ψ/ζ/lexicon scores of its documents (`score` settings); `transfer.max_queries` keeps the first
N questions. The trained models rerank these
candidates without ever training on them (pipeline/rerank.py, evaluate stage)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl

from pipeline import io, schemas
from pipeline.bias.lexicon import load_lexicon, load_wordlist
from pipeline.bias.scoring import score_documents
from pipeline.data.genderbias_qa import Collection, load_genderbias_qa
from pipeline.retrieval.bm25 import bm25_topk
from pipeline.retrieval.folds import fill
from stages.common import run_stage, setup

log = logging.getLogger("stages.transfer_data")
OUT = "data/transfer"


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    t, c, s = ns.params.transfer, ns.params.candidates, ns.params.score
    coll = load_genderbias_qa(splits=tuple(t.splits))
    if t.max_queries is not None:  # the first N question ids and the documents they judge
        queries = coll.queries.sort("query_id").head(t.max_queries)
        qrels = coll.qrels.filter(pl.col("query_id").is_in(queries["query_id"].implode()))
        corpus = coll.corpus.filter(pl.col("doc_id").is_in(qrels["doc_id"].implode()))
        coll = Collection(corpus, queries, qrels)
    judged = dict(coll.qrels.group_by("query_id").agg("doc_id").iter_rows())
    cands = bm25_topk(coll.corpus, coll.queries, k=c.top_k, k1=c.k1, b=c.b)
    cands = fill(cands, coll.queries, coll.corpus["doc_id"], judged, c.top_k, c.fill_seed)
    specific = load_wordlist(s.wordlist_specific, key="score.wordlist_specific")
    representative = load_wordlist(s.wordlist_representative, key="score.wordlist_representative")
    lexicon = load_lexicon(s.liwc_dic, key="score.liwc_dic")
    scores = score_documents(coll.corpus, specific, representative, lexicon,
                             tokenizer=s.tokenizer, tau=s.neutrality_tau)  # fmt: skip
    io.write_table(coll.corpus, f"{OUT}/corpus.parquet", schemas.CORPUS)
    io.write_table(coll.queries, f"{OUT}/queries.parquet", schemas.QUERIES)
    io.write_table(coll.qrels, f"{OUT}/qrels.parquet", schemas.QRELS)
    io.write_table(cands.sort("query_id", "rank"), f"{OUT}/candidates.parquet", schemas.CANDIDATES)
    io.write_table(scores, f"{OUT}/doc_scores.parquet", schemas.DOC_SCORES)
    log.info("transfer_data: %s (%s): %d queries, %d documents, %d candidates",
             t.name, "+".join(t.splits), coll.queries.height, coll.corpus.height,
             cands.height)  # fmt: skip


if __name__ == "__main__":
    run_stage(main)
