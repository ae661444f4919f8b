"""Stage `order@<method>`: the method's training triples in training order."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, schemas
from pipeline.ordering import OrderingContext, get_ordering
from pipeline.params import get_method
from stages.common import run_stage, setup

log = logging.getLogger("stages.order")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    m = get_method(ns.params, ns.method)
    triples = io.read_table("data/triples.parquet", schemas.TRIPLES)
    doc_scores = io.read_table("data/doc_scores.parquet", schemas.DOC_SCORES)
    ctx = OrderingContext(psi=m.psi, seed=ns.params.train.seed)
    ordered = get_ordering(m.ordering)(triples, doc_scores, ctx)
    io.write_table(ordered, f"data/order/{ns.method}.parquet", schemas.ORDERED_TRIPLES)
    log.info("order@%s: %s ordering of %d triples", ns.method, m.ordering, ordered.height)


if __name__ == "__main__":
    run_stage(main)
