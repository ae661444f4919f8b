"""Stage `order@<method>`: the method's training triples in training order (per fold, when
the triples carry one), and how Ψ⁺ moves through that order (`plots/order/<method>.csv`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl

from pipeline import io, paths, schemas
from pipeline.ordering import apply_ordering, get_ordering, psi_profile
from pipeline.params import get_method
from pipeline.retrieval.folds import for_seed
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
    doc_scores = io.read_table(paths.DOC_SCORES, schemas.DOC_SCORES)
    tables = {name: io.read_table(*TABLES[name]) for name in record.needs}
    config = ns.params.ordering_config(ns.method)
    parts, seeds = [], ns.params.train.seeds
    for seed, sub in ns.params.train.seed_runs():  # each seed: its own draw, order, folds
        own = {n: for_seed(t, seeds, seed) for n, t in tables.items()}  # its fold assignment
        ordered = apply_ordering(record, for_seed(triples, seeds, seed), doc_scores, config,
                                 psi=m.psi, seed=seed, method=m.ordering_keys,
                                 tables=own)  # fmt: skip
        parts.append(ordered.with_columns(pl.lit(seed, pl.Int64).alias("seed")) if sub else ordered)
    ordered = pl.concat(parts)
    io.write_table(ordered, paths.ordered(ns.method), schemas.ORDERED_TRIPLES)
    rho, tenths = psi_profile(ordered)
    rho_g, groups = psi_profile(ordered, ns.params.train.group_size)  # as trained
    by_group = groups.select("tenth", pl.col("psi_mean").alias("psi_mean_groups"))
    profile = tenths.with_columns(spearman=rho, spearman_groups=rho_g).join(
        by_group, on="tenth", how="left"
    )  # a tenth with no group start (few groups) is empty
    io.write_text(profile.write_csv(float_precision=6), paths.order_profile(ns.method))
    log.info(
        "order@%s: %s ordering, %d triples over %d seed(s) (from %d rows of triples.parquet); "
        "Spearman(position, Ψ⁺) = %.3f per triple, %.3f per training group as trained; "
        "mean Ψ⁺ per tenth: %s",
        ns.method, m.ordering, ordered.height, len(parts), triples.height, rho,
        rho_g, " ".join(f"{v:.3f}" for v in tenths["psi_mean"]),
    )  # fmt: skip


if __name__ == "__main__":
    run_stage(main)
