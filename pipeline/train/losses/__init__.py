"""Ranking losses: one record per loss, keyed by the ``methods.<m>.loss`` name.

Every loss is ``loss(s_pos, s_neg, batch, params) -> Tensor`` (a scalar): ``s_pos`` and
``s_neg`` are the scores ``[pairs]`` of the positive and negative document of each pair,
``batch`` carries per-pair float tensors (``psi_pos``/``psi_neg`` Ψ magnitudes,
``zeta_pos``/``zeta_neg`` neutrality ζ, ``weak_pos``/``weak_neg`` the EqualizeIR weak
learner's scores) plus ``group``/``slot`` for listwise losses (``_listwise.py``), and
``params`` the method's numeric parameters. Each :class:`Loss` record names its function,
its typed ``Config`` and the batch tensors it ``needs``.

The 12 penalty/reward variants are one table (``regularised.py``); ``margin``, ``poe`` and
``neutrality_kl`` are one file each. A new loss is one row of that table, or one file plus
its record below. This package imports no torch until a loss runs (``pipeline.params``
checks the names), so modules that import torch at load are named here, not imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config import lookup
from pipeline.train.losses import margin, regularised
from pipeline.train.losses.common import Loss, LossFn


@dataclass(frozen=True)
class PoeConfig:
    """``alpha``: weight of the weak learner's log-probabilities (default 0.1)."""

    alpha: float = 0.1


@dataclass(frozen=True)
class NeutralityConfig:
    """``coef``: weight of the KL term (required); the hinge ``margin`` (default 1)."""

    coef: float
    margin: float = 1.0


LOSSES: dict[str, Loss] = {
    "margin": margin.RECORD,
    **regularised.RECORDS,
    "neutrality_kl": Loss("neutrality_kl", "neutrality_kl", NeutralityConfig,
                          ("zeta_pos", "zeta_neg")),
    "poe": Loss("poe", "poe", PoeConfig, ("weak_pos", "weak_neg")),
}  # fmt: skip
"""Every loss's record, by name."""


def get_record(name: str) -> Loss:
    """The record of loss ``name``; an unknown name lists the known ones (no torch import)."""
    return lookup(LOSSES, name, "loss")


def get_loss(name: str) -> LossFn:
    """The function of loss ``name``; an unknown name raises ``ValueError`` listing them."""
    return get_record(name).fn


__all__ = ["LOSSES", "Loss", "LossFn", "NeutralityConfig", "PoeConfig", "get_loss", "get_record"]
