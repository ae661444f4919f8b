"""Stage `post@<entry>`: an inference-time method (SPEC §6.8, `post:` in params.yaml): its
post-processor re-ranks every seed's run of its base method (and the held-out collection's
runs) with the documents' Ψ/ζ and groups → `runs/<entry>/[seed-<n>/]run.parquet`, `run.trec`
and `transfer.parquet`, the layout of a trained method's runs, so `evaluate@<entry>` and the
report treat the entry as a method. No model is loaded: seconds, no training."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl

from pipeline import io, paths, schemas
from pipeline.params import get_post_entry
from pipeline.post import attributes, get_post
from pipeline.post.common import check_run
from pipeline.provenance import post_metadata
from stages.common import run_stage, setup

log = logging.getLogger("stages.post")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    params, name = ns.params, ns.method
    entry = get_post_entry(params, name)
    record = get_post(entry.processor)
    scores = io.read_table(paths.DOC_SCORES, schemas.DOC_SCORES)
    attrs = attributes(scores, io.read_table(paths.CORPUS, schemas.CORPUS))
    moved_attrs = attributes(
        io.read_table(paths.transfer_table("doc_scores"), schemas.DOC_SCORES),
        io.read_table(paths.transfer_table("corpus"), schemas.CORPUS),
    )
    for seed, sub in params.seed_runs_of(name):
        base = io.read_table(paths.run_file(entry.base, sub), schemas.RUN)
        check_run(base, str(paths.run_file(entry.base, sub)))
        run = record.fn(base, attrs, entry.config)
        folder = paths.runs(name, sub)
        io.write_table(run, str(paths.run_file(name, sub)), schemas.RUN)
        moved_path = paths.transfer_run(entry.base, sub)
        if moved_path.is_file():
            moved = record.fn(io.read_table(moved_path, schemas.RUN), moved_attrs, entry.config)
            io.write_table(moved, str(paths.transfer_run(name, sub)), schemas.RUN)
        meta = post_metadata(params, name, seed)
        io.write_trec_run(run.drop("fold", strict=False), str(folder / "run.trec"), tag=name,
                          metadata=meta)  # fmt: skip
        moved_n = _changed(base, run)
        log.info("post@%s: %s re-ranked %d lists of %s (%d moved)", name, entry.processor,
                 run["query_id"].n_unique(), paths.runs(entry.base, sub), moved_n)  # fmt: skip


def _changed(base: pl.DataFrame, run: pl.DataFrame) -> int:
    """How many (query, document) rows changed rank."""
    joined = base.join(run, on=["query_id", "doc_id"], suffix="_new")
    return int((joined["rank"] != joined["rank_new"]).sum())


if __name__ == "__main__":
    run_stage(main)
