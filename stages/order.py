"""Stage `order@<method>`: the method's training triples in training order (per fold, when
the triples carry one), and how Ψ⁺ moves through that order (`plots/order/<method>.csv`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, paths, schemas
from pipeline.ordering import apply_ordering, get_ordering, psi_profile
from pipeline.params import get_method
from stages.common import run_stage, setup

log = logging.getLogger("stages.order")

# The extra input tables an ordering's record may name in `needs` (all deps in dvc.yaml).
TABLES = {
    "train_candidates": (paths.TRAIN_CANDIDATES, schemas.CANDIDATES),
    "qrels": (paths.QRELS, schemas.QRELS),
}


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    m = get_method(ns.params, ns.method)
    record = get_ordering(m.ordering)
    triples = io.read_table(paths.TRIPLES, schemas.TRIPLES)
    ordered = apply_ordering(
        record,
        triples,
        io.read_table(paths.DOC_SCORES, schemas.DOC_SCORES),
        ns.params.orderings[m.ordering],
        psi=m.psi,
        seed=ns.params.train.seed,
        direction=m.direction,
        tables={name: io.read_table(*TABLES[name]) for name in record.needs},
    )
    io.write_table(ordered, paths.ordered(ns.method), schemas.ORDERED_TRIPLES)
    rho, tenths = psi_profile(ordered)
    profile = tenths.with_columns(spearman=rho)
    io.write_text(profile.write_csv(float_precision=6), paths.order_profile(ns.method))
    log.info(
        "order@%s: %s ordering of %d of %d triples; Spearman(position, Ψ⁺) = %.3f; "
        "mean Ψ⁺ per tenth: %s",
        ns.method,
        m.ordering,
        ordered.height,
        triples.height,
        rho,
        " ".join(f"{v:.3f}" for v in tenths["psi_mean"]),
    )


if __name__ == "__main__":
    run_stage(main)
