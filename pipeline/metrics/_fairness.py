"""Group-exposure fairness math, implemented once (SPEC §4.6): the AWRF divergence, the
expected-exposure scores and the stochastic policy.

The families ``awrf`` and ``exposure`` compute the project's measures with these functions,
and their TREC Fair 2022 variant (``pipeline.metrics.trec_fair2022``, a setting of the same
records) feeds the track's own inputs (its intersectional alignments, backgrounds and float32
discount) to the same functions:

- ``one_minus_jsd``: ``1 − JSD(p, q)``, ``JSD = ½ KL(p‖m) + ½ KL(q‖m)``, ``m = (p + q)/2``,
  natural log (the squared Jensen-Shannon distance), per query over tidy distributions;
  ``awrf_of_vectors`` is the same on two vectors, each normalised to sum 1 first (as
  ``scipy.spatial.distance.jensenshannon``, which the track calls);
- ``exposure_scores``: ``EE-L = ‖s − t‖²``, ``EE-D = s·s``, ``EE-R = s·t`` (Diaz et al., CIKM
  2020) and, with an alignment matrix, ``EUE = ‖Aᵀu‖²``; ``under_exposure``: ``u = max(t̂ −
  ŝ, 0)`` with ``ŝ, t̂`` normalised to sum 1;
- ``standardise`` and ``plackett_luce``: the per-query z-score and the Plackett-Luce policy
  (Gumbel top-L) that both samplers use.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from pipeline.errors import InputError


def one_minus_jsd(dist: pl.DataFrame, target: pl.DataFrame, name: str) -> pl.DataFrame:
    """`query_id, name` = 1 − JSD(p, q) (natural log) for the queries present in `dist`.

    `dist` holds `query_id, group, p`; `target` holds `query_id, group, q` for every query and
    every known group.
    """
    both = target.join(dist, on=["query_id", "group"], how="left").with_columns(
        pl.col("p").fill_null(0.0)
    )
    both = both.join(dist.select("query_id").unique(), on="query_id", how="semi")
    both = both.sort("query_id", "group")  # float sums in one fixed order: bit-identical reruns
    m = (pl.col("p") + pl.col("q")) / 2
    kl_terms = _xlogy(pl.col("p"), m) + _xlogy(pl.col("q"), m)
    return both.group_by("query_id", maintain_order=True).agg(
        (1.0 - 0.5 * kl_terms.sum()).alias(name)
    )


def _xlogy(x: pl.Expr, m: pl.Expr) -> pl.Expr:
    """`x ln(x / m)` with the convention 0 ln 0 = 0."""
    return pl.when(x > 0).then(x * (x / m).log()).otherwise(0.0)


def awrf_of_vectors(p: np.ndarray, q: np.ndarray) -> float:
    """``1 − JSD(p, q)`` of two distributions given as vectors (any shape, flattened), each
    normalised to sum 1 first: :func:`one_minus_jsd` on one query."""
    p, q = np.ravel(p), np.ravel(q)
    cells = list(range(p.size))
    dist = pl.DataFrame({"query_id": ["q"] * p.size, "group": cells, "p": p / np.sum(p)})
    target = pl.DataFrame({"query_id": ["q"] * q.size, "group": cells, "q": q / np.sum(q)})
    return float(one_minus_jsd(dist, target, "awrf")["awrf"][0])


def under_exposure(s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``u = max(t̂ − ŝ, 0)`` per document, with ``ŝ, t̂`` normalised to sum 1."""
    return np.maximum(t / t.sum() - s / s.sum(), 0.0)


def exposure_scores(s: np.ndarray, t: np.ndarray, align: np.ndarray | None) -> dict[str, float]:
    """EE-L, EE-D, EE-R and (with an alignment matrix `docs × groups`) EUE."""
    out = {"EE-L": float(np.sum((s - t) ** 2)), "EE-D": float(s @ s), "EE-R": float(s @ t)}
    if align is not None:
        out["EUE"] = float(np.sum((align.T @ under_exposure(s, t)) ** 2))
    return out


def standardise(scores: np.ndarray) -> np.ndarray:
    """Per-query z-score `(s − mean) / std` (population std); all zeros when every score is
    equal (SPEC §4.6 "Score scale": Plackett-Luce then ignores the score scale)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0 or np.all(scores == scores[0]):
        return np.zeros(scores.size)
    centred = scores - scores.mean()
    std = float(np.sqrt(np.mean(centred**2)))
    if std == 0.0:  # distinct scores whose spread underflows: treat them as all equal
        return np.zeros(scores.size)
    return centred / std


def plackett_luce(
    scores: np.ndarray, n_samples: int, length: int, temperature: float, rng: np.random.Generator
) -> np.ndarray:
    """`(n_samples, min(length, n))` document indices: Plackett-Luce rankings with item
    probabilities ∝ exp(score / temperature), via Gumbel top-L (vectorised, no Python loop)."""
    if temperature <= 0 or n_samples < 1 or length < 1:
        raise InputError(
            f"Plackett-Luce needs temperature > 0, n_samples >= 1, length >= 1; got "
            f"{temperature}, {n_samples}, {length}"
        )
    keys = scores[None, :] / temperature + rng.gumbel(size=(n_samples, scores.size))
    width = min(length, scores.size)
    top = np.argpartition(-keys, width - 1, axis=1)[:, :width]
    order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)
