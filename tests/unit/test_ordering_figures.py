"""The curriculum figures: bucket probabilities and mean Ψ⁺ per tenth of training for both
directions (issue 14 item 6), written from the triples and doc scores files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline import io, schemas
from pipeline.ordering.curriculum import CurriculumConfig
from pipeline.report.curriculum import build_curriculum_figures


def _write_inputs(folder: Path, n: int = 400) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    triples = pl.DataFrame(
        {
            "query_id": [str(i % 9) for i in range(n)],
            "pos_doc_id": [f"p{i}" for i in range(n)],
            "neg_doc_id": [f"n{i}" for i in range(n)],
        }
    )
    psi = np.where(rng.random(n) < 0.45, 0.0, rng.uniform(0.1, 1.8, n))
    zeros = pl.Series([0] * n, dtype=pl.Int64)
    scores = pl.DataFrame(
        {
            "doc_id": [f"p{i}" for i in range(n)],
            "tc_f": zeros,
            "tc_m": zeros,
            "tf_f": psi,
            "tf_m": np.zeros(n),
            "bool_f": zeros,
            "bool_m": zeros,
            "psi_tc": psi,
            "psi_tf": psi,
            "psi_bool": np.sign(psi),
            "neutrality": np.ones(n),
            "lex_f": np.zeros(n),
            "lex_m": np.zeros(n),
            "n_words": pl.Series([10] * n, dtype=pl.Int64),
            "tokenizer": ["reference"] * n,
            "lexicon": ["open"] * n,
        }
    )
    io.write_table(triples, folder / "triples.parquet", schemas.TRIPLES)
    io.write_table(scores, folder / "doc_scores.parquet", schemas.DOC_SCORES)
    return folder / "triples.parquet", folder / "doc_scores.parquet"


@pytest.mark.slow
@pytest.mark.parametrize("units", ["value", "rank"])
def test_curriculum_figures_cover_both_directions(tmp_path: Path, units: str) -> None:
    paths = _write_inputs(tmp_path)
    sigma = 0.5 if units == "value" else 0.2
    cfg = CurriculumConfig(sigma=sigma, seed=3, mu_units=units)  # type: ignore[arg-type]
    written = build_curriculum_figures(*paths, tmp_path / "fig", cfg, seed=1)
    assert all(p.is_file() and p.stat().st_size > 0 for p in written)
    tenths = pl.read_csv(tmp_path / "fig/psi_by_tenth.csv")
    assert tenths.height == 20
    assert tenths["tenth"].to_list() == list(range(10)) * 2
    low = tenths.filter(pl.col("direction") == "low_to_high")
    high = tenths.filter(pl.col("direction") == "high_to_low")
    assert low["spearman"][0] > 0.3 and high["spearman"][0] < -0.3
    assert low["psi_mean"][9] > low["psi_mean"][0]
    assert high["psi_mean"][0] > high["psi_mean"][9]
    assert low["triples"].sum() == high["triples"].sum() == 400
    buckets = pl.read_csv(tmp_path / "fig/bucket_probability.csv")
    sums = buckets.group_by("sigma").agg(pl.col("probability").sum())["probability"]
    assert sums.to_list() == pytest.approx([1.0] * 4, abs=1e-5)  # written with 6 decimals
    if units == "rank":  # bucket means in rank units lie in [0, 1]
        assert buckets["psi_mean"].is_between(0.0, 1.0).all()
