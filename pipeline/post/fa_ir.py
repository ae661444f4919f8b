"""`fa_ir`: FA*IR, the top-k ranking with a minimum share of a protected group in every
prefix (Zehlike, Bonchi, Castillo, Hajian, Megahed & Baeza-Yates, "FA*IR: A Fair Top-k
Ranking Algorithm", CIKM 2017, Algorithm 2), over the documents with an F/M group.

The documents labelled F or M keep the positions they hold in the base list (documents of
no single group, N, keep theirs), and are reassigned to those positions in FA*IR's order:
with ``protected`` the group and ``p`` its target share, the i-th F/M position must follow
at least ``m(i) = F⁻¹(α; i, p)`` protected documents (the smallest m with binomial
``P[X ≤ m] ≥ α``, X ~ Bin(i, p); the paper's ``m_{α,p}(k)``, without its multiple-test
adjustment of α); where the count is short the best remaining protected document is taken,
else the better of the two groups' best remaining (base score, then base rank). Scores of the
new run are the base list's scores in rank order, so score and rank agree.
Inputs: the base run; the corpus's F/M/N ``group``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Literal

import polars as pl

from pipeline.config import Checked, Range
from pipeline.post.common import PostProcessor, list_keys, reranked, with_attributes


@dataclass(frozen=True)
class FairConfig(Checked):
    """``p``: the protected group's target share (0 < p < 1); ``alpha``: the significance of
    the binomial test of each prefix (0 < α < 1); ``protected``: the group (F or M)."""

    p: Annotated[float, Range(gt=0, le=0.99)] = 0.5
    alpha: Annotated[float, Range(gt=0, le=0.5)] = 0.1
    protected: Literal["F", "M"] = "F"


@lru_cache(maxsize=4096)
def minimum(k: int, p: float, alpha: float) -> int:
    """``m_{α,p}(k)``: the smallest m with ``P[Bin(k, p) ≤ m] ≥ α`` (the inverse binomial CDF)."""
    total = 0.0
    for m in range(k + 1):
        total += math.comb(k, m) * p**m * (1 - p) ** (k - m)
        if total >= alpha - 1e-12:
            return m
    return k


def fair_order(groups: list[bool], cfg: FairConfig) -> list[int]:
    """FA*IR's order of documents given in base order (``groups[i]``: protected): the indices
    of the base list in their new order."""
    protected = [i for i, g in enumerate(groups) if g]
    other = [i for i, g in enumerate(groups) if not g]
    out: list[int] = []
    taken = 0
    while protected or other:
        need = minimum(len(out) + 1, cfg.p, cfg.alpha)
        if protected and (taken < need or not other or protected[0] < other[0]):
            out.append(protected.pop(0))
            taken += 1
        else:
            out.append(other.pop(0))
    return out


def _one_list(frame: pl.DataFrame, cfg: FairConfig) -> pl.DataFrame:
    labelled = frame["group"].is_in(["F", "M"]).to_list()
    slots = [i for i, lab in enumerate(labelled) if lab]
    groups = [frame["group"][i] == cfg.protected for i in slots]
    order = list(range(frame.height))
    for slot, j in zip(slots, fair_order(groups, cfg), strict=True):
        order[slot] = slots[j]
    moved = frame[order]
    return moved.with_columns(frame["score"].alias("score"), frame["rank"].alias("rank"))


def fa_ir(run: pl.DataFrame, attrs: pl.DataFrame, cfg: FairConfig) -> pl.DataFrame:
    """The run re-ranked by FA*IR per list (module docstring)."""
    keys = list_keys(run)
    joined = with_attributes(run, attrs, "fa_ir").sort([*keys, "rank"])
    parts = [_one_list(part, cfg) for part in joined.partition_by(keys, maintain_order=True)]
    return reranked(pl.concat(parts), keys)


RECORD = PostProcessor(
    "fa_ir", fa_ir, FairConfig, "Zehlike et al., FA*IR, CIKM 2017 (Algorithm 2)"
)
