"""Stage `rerank@<method>`: the method's model scores the BM25 candidates → run.

Writes `runs/<method>/run.parquet` and `run.trec`; with `train.seeds`, one `seed-<n>/` folder
of both per seed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from pipeline import io, schemas
from pipeline.rerank import rerank
from pipeline.train.model import load_trained
from stages.common import run_stage, setup, torch_threads

log = logging.getLogger("stages.rerank")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    params = ns.params
    torch_threads(params)
    candidates = io.read_table("data/candidates.parquet", schemas.CANDIDATES)
    corpus = io.read_table("data/corpus.parquet", schemas.CORPUS)
    queries = io.read_table("data/queries.parquet", schemas.QUERIES)
    texts = (
        dict(zip(queries["query_id"], queries["text"], strict=True)),
        dict(zip(corpus["doc_id"], corpus["text"], strict=True)),
    )
    for _seed, sub in params.train.seed_runs():
        tokenizer, model = load_trained(str(Path("models", ns.method, sub)))
        run = rerank(
            model,
            tokenizer,
            candidates,
            *texts,
            batch_size=params.rerank.batch_size,
            max_len=params.model.max_len,
            q_len=params.model.q_len,
            device=params.train.device,
        )
        out = Path("runs", ns.method, sub)
        io.write_table(run, str(out / "run.parquet"), schemas.RUN)
        io.write_trec_run(run, str(out / "run.trec"), tag=ns.method)
        n_queries = run["query_id"].n_unique()
        log.info("rerank@%s: %s: %d queries, %d rows", ns.method, out, n_queries, run.height)


if __name__ == "__main__":
    run_stage(main)
