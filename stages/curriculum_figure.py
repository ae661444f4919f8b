"""Stage `curriculum_figure`: bucket sampling probabilities for several σ (curriculum paper,
Figure 1) and mean Ψ⁺ per tenth of training for both directions, on the real training
triples with `orderings.curriculum`."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline import paths
from pipeline.ordering.curriculum import CurriculumConfig
from pipeline.report.curriculum import build_curriculum_figures
from stages.common import run_stage, setup


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv)
    build_curriculum_figures(
        paths.TRIPLES,
        paths.DOC_SCORES,
        paths.CURRICULUM_PLOTS,
        ns.params.orderings.get("curriculum") or CurriculumConfig(),
        ns.params.train.seed,
    )


if __name__ == "__main__":
    run_stage(main)
