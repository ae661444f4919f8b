"""Bias-aware curriculum (SPEC §6.1): Ψ buckets, Gaussian bucket weights, an exact sampler.

The SPEC's Decision defines the order by a sequential process: repeatedly choose a non-empty
bucket ``i`` with probability ``P_i / Σ_{j non-empty} P_j`` and place a uniformly random
remaining triple of it. Done literally that renormalises over up to 10⁶ buckets per draw
(O(n²)). :func:`race_order` draws from exactly the same distribution in O(n log n).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.ordering.common import Seed, numbered, rng, with_positive_psi

logger = logging.getLogger(__name__)

FloatArray = np.ndarray


def assign_buckets(psi: FloatArray, n_buckets: int | None, tie_keys: FloatArray) -> np.ndarray:
    """Bucket (0 = lowest Ψ) of each triple: Ψ sorted, split into equal consecutive parts.

    ``n_buckets=None`` (or more buckets than triples) gives one triple per bucket. Sizes
    differ by at most one. Triples of equal Ψ are ordered by ``tie_keys`` (random keys in the
    sampler), so which tied triple lands in which bucket does not depend on the input order.
    """
    n = len(psi)
    b = n if n_buckets is None else min(n_buckets, n)
    order = np.lexsort((tie_keys, psi))
    bucket = np.empty(n, dtype=np.int64)
    bucket[order] = (np.arange(n, dtype=np.int64) * b) // max(n, 1)
    return bucket


def bucket_log_weights(
    psi: FloatArray, bucket: np.ndarray, mu: float, sigma: float
) -> tuple[FloatArray, FloatArray]:
    """``(x, log P)`` per bucket: mean Ψ ``x_i`` and ``log P_i = −(x_i − μ)² / (2σ²)``."""
    counts = np.bincount(bucket)
    x = np.bincount(bucket, weights=psi) / np.maximum(counts, 1)
    return x, -((x - mu) ** 2) / (2.0 * sigma**2)


def default_mu(psi: FloatArray, direction: str) -> float:
    """μ of a direction: min Ψ for ``low_to_high``, max Ψ for ``high_to_low`` (0 if empty)."""
    if len(psi) == 0:
        return 0.0
    return float(psi.min() if direction == "low_to_high" else psi.max())


def race_order(bucket: np.ndarray, log_p: FloatArray, rng: np.random.Generator) -> np.ndarray:
    """Triple indices in curriculum order, an exact draw of the sequential bucket sampler.

    Construction: give bucket ``i`` a Poisson process of rate ``P_i`` whose k-th arrival
    places the k-th triple of a uniformly random permutation of the bucket; bucket ``i``
    has ``n_i`` arrivals, at ``T_{i,k} = (E_1 + … + E_k) / P_i`` with ``E`` iid Exp(1).
    Sorting all triples by arrival time is the curriculum order.

    Equivalence with the SPEC's process, by induction over placements: condition on the
    first ``m`` placements, made at time ``t``. By memorylessness the residual waiting times
    of the buckets are again independent Exp(``P_j``), independent of the past; buckets
    with no triple left have no arrivals. The next placement is therefore the bucket whose
    residual time is smallest among the non-empty ones, which is bucket ``i`` with
    probability ``P_i / Σ_{j non-empty} P_j`` (minimum of independent exponentials), and
    the triple it places is uniform among that bucket's remaining ones (the random
    permutation, independent of the times). That is one step of the sequential sampler with
    the same conditional law, so the whole order has the same distribution. Ties happen
    with probability 0.

    Sorting by ``log T = log(E_1 + … + E_k) − log P_i`` keeps it exact when ``P_i``
    underflows in floating point (``log P_i`` is computed directly). With one triple per
    bucket this is the Gumbel-top-k (Plackett–Luce) sampler: ``−log E`` is Gumbel.
    Cost: two sorts, O(n log n).
    """
    n = len(bucket)
    within_keys = rng.random(n)
    exps = rng.standard_exponential(n)
    order = np.lexsort((within_keys, bucket))  # by bucket, random permutation inside
    sorted_bucket = bucket[order]
    counts = np.bincount(sorted_bucket, minlength=len(log_p))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    slot = np.arange(n) - starts[sorted_bucket]
    grid = np.zeros((len(counts), int(counts.max(initial=0))))
    grid[sorted_bucket, slot] = exps
    arrival = np.cumsum(grid, axis=1)[sorted_bucket, slot]  # exact per-bucket partial sums
    log_time = np.log(arrival) - log_p[sorted_bucket]
    return order[np.argsort(log_time, kind="stable")]


def rank_values(psi: FloatArray) -> FloatArray:
    """Ψ in rank units: ``(average rank − 1) / (n − 1)`` in [0, 1], ties sharing their mean
    rank (``mu_units: rank``; one triple gives 0)."""
    if len(psi) < 2:
        return np.zeros(len(psi))
    ranks = pl.Series(psi).rank("average").to_numpy().astype(np.float64)
    return (ranks - 1.0) / (len(psi) - 1)


def curriculum_order(
    triples: pl.DataFrame,
    doc_scores: pl.DataFrame,
    *,
    psi: str,
    n_buckets: int | None,
    mu: float | None,
    sigma: float,
    seed: Seed,
    direction: str,
    mu_units: str = "value",
) -> pl.DataFrame:
    """Triples in curriculum order with ``position``, ``psi`` and ``bucket`` (SPEC §6.1).

    ``mu_units="rank"`` puts the bucket means, μ and σ in rank units (:func:`rank_values`)
    instead of Ψ values, so both directions see the same spread of distances from μ.
    """
    scored = with_positive_psi(triples, doc_scores, psi)
    values = scored["psi"].to_numpy().astype(np.float64)
    gen = rng(seed)
    bucket = assign_buckets(values, n_buckets, gen.random(len(values)))
    x = rank_values(values) if mu_units == "rank" else values
    centre = mu if mu is not None else default_mu(x, direction)
    _, log_p = bucket_log_weights(x, bucket, centre, sigma)
    order = race_order(bucket, log_p, gen)
    logger.info(
        "curriculum %s: %d triples in %d buckets, mu=%.4g (%s units), sigma=%.4g",
        direction, len(values), len(log_p), centre, mu_units, sigma,
    )  # fmt: skip
    out = scored.with_columns(pl.Series("bucket", bucket, dtype=pl.Int64))[order]
    return numbered(out)


def bucket_probabilities(
    psi: Sequence[float] | FloatArray,
    sigmas: Sequence[float] = (0.5, 1.0, 2.0, 3.0),
    n_buckets: int = 10,
    direction: str = "low_to_high",
    mu: float | None = None,
) -> pl.DataFrame:
    """Normalised bucket probabilities per σ, for the paper's Figure 1 (SPEC §6.1).

    Returns a tidy frame ``sigma, bucket, psi_mean, probability`` (probabilities of one σ
    sum to 1); ``psi`` are the triples' Ψ values (of the positives).
    """
    values = np.asarray(psi, dtype=np.float64)
    if len(values) == 0:
        raise InputError("bucket_probabilities needs at least one Ψ value; got none")
    bucket = assign_buckets(values, n_buckets, np.zeros(len(values)))
    centre = mu if mu is not None else default_mu(values, direction)
    frames = []
    for sigma in sigmas:
        x, log_p = bucket_log_weights(values, bucket, centre, float(sigma))
        prob = np.exp(log_p - log_p.max())
        frames.append(
            pl.DataFrame(
                {
                    "sigma": np.full(len(x), float(sigma)),
                    "bucket": np.arange(len(x), dtype=np.int64),
                    "psi_mean": x,
                    "probability": prob / prob.sum(),
                }
            )
        )
    return pl.concat(frames)
