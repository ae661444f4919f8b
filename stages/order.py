"""Stage `order_<group>@<method>`: the method's training triples in training order."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, schemas
from pipeline.ordering import ORDER_GROUPS, OrderingContext, get_ordering
from pipeline.params import MethodParams, Params, get_method
from stages.common import run_stage, setup

log = logging.getLogger("stages.order")


def context(params: Params, m: MethodParams) -> OrderingContext:
    """The ordering's inputs from the params section its order stage declares."""
    group = ORDER_GROUPS[m.ordering]
    if group == "curriculum":
        c = params.curriculum
        return OrderingContext(
            psi=c.psi,
            seed=c.seed,
            n_buckets=c.buckets(),
            mu=c.mu,
            sigma=c.sigma,
            direction=c.direction if m.ordering == "curriculum" else None,
        )
    if group == "lws":
        return OrderingContext(
            psi=m.psi,
            seed=params.train.seed,
            rate=params.lws.rate,
            lws_top=params.lws.top,
            candidates=io.read_table("data/train_candidates.parquet", schemas.CANDIDATES),
            qrels=io.read_table("data/qrels.parquet", schemas.QRELS),
        )
    return OrderingContext(psi=m.psi, seed=params.train.seed)


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    m = get_method(ns.params, ns.method)
    triples = io.read_table("data/triples.parquet", schemas.TRIPLES)
    doc_scores = io.read_table("data/doc_scores.parquet", schemas.DOC_SCORES)
    ordered = get_ordering(m.ordering)(triples, doc_scores, context(ns.params, m))
    io.write_table(ordered, f"data/order/{ns.method}.parquet", schemas.ORDERED_TRIPLES)
    log.info(
        "order@%s: %s ordering of %d of %d triples",
        ns.method,
        m.ordering,
        ordered.height,
        triples.height,
    )


if __name__ == "__main__":
    run_stage(main)
