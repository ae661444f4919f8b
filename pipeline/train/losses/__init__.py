"""Loss terms: one record per term, keyed by the name a method lists under ``loss``.

A method's training loss is the sum of its terms, each scaled by its weight (``methods.<m>.loss:
{margin: {}, neutrality_kl: {coef: 1}}`` trains on ``margin + 1 · KL``; each term has its own
settings under its name). A score term is ``fn(s_pos, s_neg, batch, cfg) -> Tensor`` (a scalar):
``s_pos`` and ``s_neg`` are the scores ``[pairs]`` of the positive and negative document of each
pair, ``batch`` carries per-pair float tensors (``psi_pos``/``psi_neg`` Ψ magnitudes,
``zeta_pos``/``zeta_neg`` neutrality ζ, ``version_pos``/``version_neg`` each document's F/M/N
version (0/1/2, −1 none), ``weak_pos``/``weak_neg`` the EqualizeIR weak learner's scores) plus
``group``/``slot`` for listwise terms (``_listwise.py``) and ``query`` (which of the batch's
queries: the versions of a relevant document are one query's positives), and ``cfg`` the term's
typed ``Config``, loaded from its entry in the method's ``loss`` mapping. A trainable term (the
AdvBERT adversary) reads the documents' representations. See
:class:`~pipeline.train.losses.common.Loss`.

Every public module of this package is one term named after its key and defines ``RECORD =
Loss(...)``, or a table of related terms as ``RECORDS = {name: Loss}`` (``regularised.py``: the
penalty/reward terms, pairwise and pointwise); ``common`` and modules starting with ``_`` are
helpers. The registry is collected from those records, so a new term is one file. This package
imports no torch until a loss runs.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pipeline.config import build, collect, lookup
from pipeline.train.losses.common import Loss, LossFn, NoConfig, Objective, Prepared

if TYPE_CHECKING:
    from torch import Tensor

HELPERS = frozenset({"common"})
"""Public modules of this package that are not loss terms."""


def _collect() -> dict[str, Loss]:
    records = collect(__name__, __path__, HELPERS, Loss, "loss term")
    for module, record in records:
        in_table = getattr(sys.modules[f"{__name__}.{module}"], "RECORDS", None) is not None
        if not in_table and record.name != module:
            raise TypeError(f"pipeline/train/losses/{module}.py: RECORD must be named {module!r}")
    return {r.name: r for _, r in records}


LOSSES: dict[str, Loss] = _collect()
"""Every loss term's record, by name."""
REGISTRY = LOSSES
"""This plug-in package's records (``pipeline.plugins``)."""


def get_record(name: str) -> Loss:
    """The record of loss ``name``; an unknown name lists the known ones (no torch import)."""
    return lookup(LOSSES, name, "loss")


def get_loss(name: str) -> LossFn:
    """The function of score term ``name``; an unknown name lists the known ones."""
    record = get_record(name)
    if record.fn is None:
        raise TypeError(f"loss {name!r} is a trainable term, not a function of the scores")
    return record.fn


def make_config(name: str, values: Mapping[str, Any] | None = None) -> Any:
    """The config of loss ``name`` from params-style keys (``{"lambda": 2}``), checked as
    params.yaml is (unknown and missing keys refused)."""
    return build(get_record(name).config, dict(values or {}), f"loss {name}", f"loss {name!r}")


def add_term(total: Tensor | None, value: Tensor, weight: float | None) -> Tensor:
    """``total + weight · value`` (``weight`` None: 1, no multiplication; ``total`` None: the
    first term): how a method's terms are summed."""
    term = value if weight is None else weight * value
    return term if total is None else total + term


def score_value(
    objective: Objective, s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor]
) -> Tensor | None:
    """The weighted sum of the score terms of ``objective`` (``None`` without any): the
    method's loss on these pairs before its trainable terms."""
    total = None
    for name, cfg in objective:
        record = get_record(name)
        if record.fn is not None:
            total = add_term(total, record.fn(s_pos, s_neg, batch, cfg), record.scale(cfg))
    return total


__all__ = [
    "LOSSES",
    "Loss",
    "LossFn",
    "NoConfig",
    "Objective",
    "Prepared",
    "add_term",
    "get_loss",
    "get_record",
    "make_config",
    "score_value",
]
