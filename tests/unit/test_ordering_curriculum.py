"""Bias-aware curriculum ordering: coverage, direction, σ, μ units, exactness of the sampler,
scale."""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest
from scipy.stats import spearmanr

from pipeline.ordering import Inputs, bucket_probabilities
from pipeline.ordering._curriculum import assign_buckets, race_order, rank_values
from pipeline.ordering.curriculum import CurriculumConfig, curriculum


def _synthetic(n: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    triples = pl.DataFrame(
        {
            "query_id": [str(i % 7) for i in range(n)],
            "pos_doc_id": [f"p{i}" for i in range(n)],
            "neg_doc_id": [f"n{i}" for i in range(n)],
        }
    )
    psi_tf = rng.uniform(-3.0, 3.0, n)  # signed; the orderings use |Ψ|
    scores = pl.DataFrame(
        {
            "doc_id": [f"p{i}" for i in range(n)],
            "psi_bool": np.sign(psi_tf),
            "psi_tf": psi_tf,
            "psi_tc": np.round(psi_tf),
        }
    )
    return triples, scores


def _rho(out: pl.DataFrame) -> float:
    return float(spearmanr(out["position"], out["psi"]).statistic)


def _order(
    triples: pl.DataFrame,
    scores: pl.DataFrame,
    direction: str | None = None,
    train_seed: int = 0,
    **cfg: object,
) -> pl.DataFrame:
    """The curriculum with ``orderings.curriculum`` = ``cfg`` (Ψ column tf_abs; its own
    ``seed`` if ``cfg`` sets one, else ``train_seed``)."""
    config = CurriculumConfig(**{"psi": "tf_abs", "seed": None, **cfg})  # type: ignore[arg-type]
    return curriculum(triples, scores, config, Inputs(seed=train_seed, direction=direction))


@pytest.mark.parametrize("direction", ["low_to_high", "high_to_low", None])
@pytest.mark.parametrize("n_buckets", ["all", 1, 10, 3000])
def test_curriculum_places_every_triple_exactly_once(
    direction: str | None, n_buckets: int | str
) -> None:
    triples, scores = _synthetic(500)
    out = _order(triples, scores, direction, n_buckets=n_buckets)
    assert out["position"].to_list() == list(range(500))
    assert sorted(out["pos_doc_id"]) == sorted(triples["pos_doc_id"])
    assert out["neg_doc_id"].str.slice(1).to_list() == out["pos_doc_id"].str.slice(1).to_list()
    expected_buckets = 500 if n_buckets == "all" else min(int(n_buckets), 500)
    assert out["bucket"].n_unique() == expected_buckets


def test_buckets_are_equal_consecutive_psi_ranges() -> None:
    psi = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 0.0, 6.0])
    bucket = assign_buckets(psi, 3, np.zeros(7))
    # sorted Ψ 0..6 split 3/2/2 → floor(j·3/7): j=0,1,2 → 0; 3,4 → 1; 5,6 → 2
    assert bucket.tolist() == [2, 0, 1, 0, 1, 0, 2]
    assert assign_buckets(psi, None, np.zeros(7)).tolist() == [5, 1, 3, 2, 4, 0, 6]


@pytest.mark.parametrize("n_buckets", ["all", 10])
def test_low_to_high_correlates_positively_and_more_for_smaller_sigma(n_buckets: int | str) -> None:
    triples, scores = _synthetic(3000)
    rhos = [
        _rho(_order(triples, scores, "low_to_high", n_buckets=n_buckets, sigma=s, seed=3))
        for s in (0.5, 1.0, 3.0)
    ]
    assert all(r > 0.05 for r in rhos)
    assert rhos[0] > rhos[1] > rhos[2]


def test_high_to_low_correlates_negatively() -> None:
    triples, scores = _synthetic(3000)
    for n_buckets in ("all", 10):
        assert _rho(_order(triples, scores, "high_to_low", n_buckets=n_buckets, sigma=0.5)) < -0.8
        assert _rho(_order(triples, scores, None, n_buckets=n_buckets, sigma=0.5)) > 0.8


def test_explicit_mu_centres_the_curriculum() -> None:
    triples, scores = _synthetic(3000)
    out = _order(triples, scores, "low_to_high", n_buckets=20, mu=1.5, sigma=0.3, seed=2)
    first = out.head(300)["psi"].to_numpy()
    assert abs(float(np.median(first)) - 1.5) < 0.3


def test_own_seed_wins_over_the_inputs_seed() -> None:
    triples, scores = _synthetic(200)
    a = _order(triples, scores, train_seed=1, n_buckets=5, seed=9)
    assert a.equals(_order(triples, scores, train_seed=2, n_buckets=5, seed=9))
    assert not a.equals(_order(triples, scores, train_seed=1, n_buckets=5, seed=8))


def test_rank_values_share_mean_ranks_on_ties() -> None:
    # sorted: 0, 0, 1, 5 → average ranks 1.5, 1.5, 3, 4 → (r − 1) / 3
    assert rank_values(np.array([5.0, 0.0, 1.0, 0.0])).tolist() == pytest.approx(
        [1.0, 0.5 / 3, 2 / 3, 0.5 / 3]
    )
    assert rank_values(np.array([2.0])).tolist() == [0.0]


def test_rank_units_make_the_directions_mirror_images() -> None:
    # Ψ skewed (most mass near 0): in value units low→high is much weaker than high→low;
    # in rank units with distinct Ψ the two directions are exact mirror images in law.
    rng = np.random.default_rng(0)
    triples, scores = _synthetic(4000)
    scores = scores.with_columns(pl.Series("psi_tf", rng.exponential(0.3, 4000) ** 2))
    value = [_rho(_order(triples, scores, d, sigma=0.5, seed=4)) for d in DIRS]
    rank = [_rho(_order(triples, scores, d, sigma=0.2, mu_units="rank", seed=4)) for d in DIRS]
    assert value[0] < -value[1] - 0.2  # asymmetric
    assert rank[0] == pytest.approx(-rank[1], abs=0.03)


DIRS = ("low_to_high", "high_to_low")


@pytest.mark.slow
def test_race_order_matches_the_sequential_sampler_exactly() -> None:
    # Buckets A (2 triples, P=1) and B (1 triple, P=3). Sequential sampler:
    # P(B A A) = 3/4, P(A B A) = 1/4·3/4 = 3/16, P(A A B) = 1/4·1/4 = 1/16.
    bucket = np.array([0, 0, 1])
    log_p = np.log(np.array([1.0, 3.0]))
    rng = np.random.default_rng(0)
    runs = 20000
    counts = Counter(
        "".join("AB"[bucket[i]] for i in race_order(bucket, log_p, rng)) for _ in range(runs)
    )
    for seq, p in {"BAA": 3 / 4, "ABA": 3 / 16, "AAB": 1 / 16}.items():
        assert counts[seq] / runs == pytest.approx(p, abs=4 * (p * (1 - p) / runs) ** 0.5)


def test_race_order_is_exact_when_weights_underflow() -> None:
    bucket = np.arange(4)
    log_p = np.array([-1e6, -2e6, 0.0, -3e6])  # exp() underflows to 0 for three of them
    order = race_order(bucket, log_p, np.random.default_rng(0))
    assert order.tolist() == [2, 0, 1, 3]


def test_curriculum_is_seeded() -> None:
    triples, scores = _synthetic(200)
    a = _order(triples, scores, train_seed=1, n_buckets=5)
    assert a.equals(_order(triples, scores, train_seed=1, n_buckets=5))
    assert not a.equals(_order(triples, scores, train_seed=2, n_buckets=5))


@pytest.mark.slow
def test_all_buckets_on_a_million_triples_runs() -> None:
    n = 1_000_000
    triples, scores = _synthetic(n)
    out = _order(triples, scores, n_buckets="all")
    assert out.height == n
    assert out["bucket"].n_unique() == n
    assert out["position"].is_sorted()


def test_bucket_probabilities_for_the_sigma_figure() -> None:
    psi = np.arange(100, dtype=float) / 10  # buckets of 10: means 0.45, 1.45, …, 9.45
    frame = bucket_probabilities(psi)
    assert frame.columns == ["sigma", "bucket", "psi_mean", "probability"]
    assert frame["sigma"].unique().sort().to_list() == [0.5, 1.0, 2.0, 3.0]
    assert frame.height == 40
    sums = frame.group_by("sigma").agg(pl.col("probability").sum())["probability"]
    assert sums.to_list() == pytest.approx([1.0] * 4)
    one = frame.filter(pl.col("sigma") == 1.0)
    assert one["psi_mean"].to_list() == pytest.approx([i + 0.45 for i in range(10)])
    raw = np.exp(-((one["psi_mean"].to_numpy() - 0.0) ** 2) / 2)  # μ = min Ψ = 0
    assert one["probability"].to_list() == pytest.approx((raw / raw.sum()).tolist())
    high = bucket_probabilities(psi, sigmas=[1.0], direction="high_to_low")
    assert high["probability"].arg_max() == 9


def test_bucket_probabilities_needs_values() -> None:
    with pytest.raises(ValueError, match="at least one Ψ value"):
        bucket_probabilities([])
