"""The curriculum figures (SPEC §6.1, issue 14 item 6) on the real training triples.

``bucket_probability.{csv,png}``: the probability of drawing each Ψ bucket for several σ
(the curriculum paper's Figure 1, ``low_to_high``). ``psi_by_tenth.{csv,png}``: mean Ψ⁺ of
the triples in each tenth of training for both directions, drawn with the configured
``orderings.curriculum``, and each direction's Spearman(position, Ψ⁺): with μ = min/max Ψ
the two directions are not equally strict (docs/decisions.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from pipeline import io, schemas
from pipeline.ordering import (
    DIRECTIONS,
    apply_ordering,
    bucket_probabilities,
    draw_negatives,
    psi_profile,
)
from pipeline.ordering._curriculum import rank_values
from pipeline.ordering.common import with_positive_psi
from pipeline.ordering.curriculum import RECORD, CurriculumConfig
from pipeline.report.plots import bucket_probability_figure, save_png

SIGMAS = (0.5, 1.0, 2.0, 3.0)  # σ values of the bucket figure (the paper's Figure 1)


def psi_by_tenth(
    triples: pl.DataFrame, doc_scores: pl.DataFrame, cfg: CurriculumConfig, seed: int
) -> pl.DataFrame:
    """``direction, tenth, psi_mean, biased_share, triples, spearman`` for both directions."""
    frames = []
    for direction in DIRECTIONS:
        ordered = apply_ordering(
            RECORD, triples, doc_scores, cfg, psi=cfg.psi, seed=seed, direction=direction
        )
        rho, tenths = psi_profile(ordered)
        frames.append(tenths.select(pl.lit(direction).alias("direction"), pl.all(), spearman=rho))
    return pl.concat(frames)


def psi_by_tenth_figure(frame: pl.DataFrame, psi: str) -> Figure:
    """Mean Ψ⁺ per tenth of training, one line per direction (legend: Spearman ρ)."""
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.add_subplot()
    for (direction,), part in frame.group_by("direction", maintain_order=True):
        rho = part["spearman"][0]
        label = f"{str(direction).replace('_to_', ' → ')} (ρ = {rho:+.2f})"
        ax.plot(part["tenth"] + 1, part["psi_mean"], marker="o", markersize=3, label=label)
    ax.set_xlabel("tenth of training")
    ax.set_ylabel(f"mean Ψ⁺ ({psi}) of the positives")
    ax.set_xticks(range(1, 11))
    ax.legend(title="curriculum direction (Spearman of position, Ψ⁺)", fontsize=8)
    ax.grid(True, alpha=0.3)
    return fig


def build_curriculum_figures(
    triples_path: str | Path,
    doc_scores_path: str | Path,
    out_dir: str | Path,
    cfg: CurriculumConfig,
    seed: int,
) -> list[Path]:
    """Both curriculum figures → ``<out_dir>/{bucket_probability,psi_by_tenth}.{csv,png}``.

    ``seed`` is ``train.seed`` (used when ``cfg.seed`` is null). Bucket means are in the
    units of ``cfg.mu_units``.
    """
    triples = io.read_table(triples_path, schemas.TRIPLES)
    doc_scores = io.read_table(doc_scores_path, schemas.DOC_SCORES)
    drawn = draw_negatives(triples, seed)  # the sampled negatives of the run seeded by `seed`
    values = with_positive_psi(drawn, doc_scores, cfg.psi)["psi"].to_numpy()
    if cfg.mu_units == "rank":
        values = rank_values(np.asarray(values, dtype=np.float64))
    buckets = bucket_probabilities(values, SIGMAS, cfg.buckets() or 10, "low_to_high", cfg.mu)
    tenths = psi_by_tenth(triples, doc_scores, cfg, seed)
    out = Path(out_dir)
    io.write_text(buckets.write_csv(float_precision=6), out / "bucket_probability.csv")
    save_png(bucket_probability_figure(buckets), out / "bucket_probability.png")
    io.write_text(tenths.write_csv(float_precision=6), out / "psi_by_tenth.csv")
    save_png(psi_by_tenth_figure(tenths, cfg.psi), out / "psi_by_tenth.png")
    return [
        out / f"{n}.{e}" for n in ("bucket_probability", "psi_by_tenth") for e in ("csv", "png")
    ]
