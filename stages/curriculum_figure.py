"""Stage `curriculum_figure`: bucket sampling probabilities for several σ (curriculum paper,
Figure 1) on the real training triples."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.report.build import build_curriculum_figure
from stages.common import run_stage, setup


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    c = ns.params.curriculum
    build_curriculum_figure(
        "data/triples.parquet",
        "data/doc_scores.parquet",
        "plots/curriculum",
        psi=c.psi,
        n_buckets=c.buckets() or 10,
        direction=c.direction,
        mu=c.mu,
    )


if __name__ == "__main__":
    run_stage(main)
