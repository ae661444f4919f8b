"""The 12 penalty/reward losses as one table: form × kind × side (SPEC §6.2).

Each document of a triple gets an offset ``a = sign · λ_side · value`` on its score where its
side is active (0 elsewhere). The ``penalty`` adds Ψ: a biased document counts as scored
higher, so biased positives are pushed up less and biased negatives down harder. The
``reward`` subtracts ζ: neutral positives are pushed up harder and neutral negatives down
less. **Decision**: the reward reads ζ as the paper says (the published code uses Ψ).
``lambda_pos`` / ``lambda_neg`` override ``lambda`` per side.

Paper: Seyedsalehi et al., loss-regularisation journal paper (penalty and reward terms; code:
shirinssalehi/LossRegularizationJournal); ``penalty_irrelevant`` with Ψ = |psi_bool| is the
bias-aware loss of Seyedsalehi et al., EDBT 2022.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from pipeline.train.losses._pairwise import column, hinge, lambda_for, margin_of
from pipeline.train.losses.common import Loss, LossFn

if TYPE_CHECKING:
    from torch import Tensor

Offset: TypeAlias = "Tensor | float"
Params: TypeAlias = Mapping[str, float]
PAPER = "Seyedsalehi et al., loss-regularisation journal paper (penalty and reward terms)"


@dataclass(frozen=True)
class PointwiseConfig:
    """λ of both sides (``lambda``), or per side (``lambda_pos``, ``lambda_neg``)."""

    lambda_: float | None = None
    lambda_pos: float | None = None
    lambda_neg: float | None = None


@dataclass(frozen=True)
class PairwiseConfig(PointwiseConfig):
    """λ as in the pointwise form, and the hinge ``margin`` (default 1)."""

    margin: float = 1.0


def pairwise(s_pos: Tensor, s_neg: Tensor, a_pos: Offset, a_neg: Offset, p: Params) -> Tensor:
    """``mean(max(0, m − (tanh s⁺ + a⁺) + (tanh s⁻ + a⁻)))``."""
    return hinge(s_pos, s_neg, a_pos, a_neg, margin_of(p))


def pointwise(s_pos: Tensor, s_neg: Tensor, a_pos: Offset, a_neg: Offset, p: Params) -> Tensor:
    """``mean((sigmoid(s + a) − y)²)`` over all ``2 × batch`` documents (y⁺ = 1, y⁻ = 0)."""
    import torch  # here, not at load: the table is read without torch (pipeline.params)

    p_pos, p_neg = (s_pos + a_pos).sigmoid(), (s_neg + a_neg).sigmoid()
    return torch.cat([(p_pos - 1.0) ** 2, p_neg**2]).mean()


FORMS: dict[str, tuple[str, Callable[..., Tensor], type]] = {
    "pairwise": ("", pairwise, PairwiseConfig),
    "pointwise": ("pointwise_", pointwise, PointwiseConfig),
}
"""form → (name prefix, formula of the scores and offsets ``a⁺, a⁻``, Config)."""
KINDS = {"penalty": ("psi", +1.0), "reward": ("zeta", -1.0)}
"""kind → (the per-document value it reads, sign of the offset)."""
SIDES = {"relevant": ("pos",), "irrelevant": ("neg",), "both": ("pos", "neg")}
"""side → the documents of a triple that get an offset."""


def _loss(name: str, form: str, kind: str, side: str) -> LossFn:
    formula, (value, sign), active = FORMS[form][1], KINDS[kind], SIDES[side]

    def loss(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Params) -> Tensor:
        a: dict[str, Tensor | float] = {"pos": 0.0, "neg": 0.0}
        for d, s in (("pos", s_pos), ("neg", s_neg)):
            if d in active:
                a[d] = sign * lambda_for(params, d, name) * column(batch, f"{value}_{d}", s, name)
        return formula(s_pos, s_neg, a["pos"], a["neg"], params)

    keys = ", ".join(f"``batch['{value}_{d}']``" for d in active)
    lams = " / ".join(f"``lambda_{d}``" for d in active)
    margin = " and ``margin`` (default 1)" if form == "pairwise" else ""
    loss.__name__ = loss.__qualname__ = name
    formula_text = (formula.__doc__ or "").strip().rstrip(".")
    loss.__doc__ = (
        f"{formula_text} with ``a = {'+' if sign > 0 else '−'}λ·{value}`` "
        f"on the {side} side ({kind}, SPEC §6.2; see ``pipeline.train.losses.regularised``).\n\n"
        f"Paper: {PAPER}.\nInputs: scores ``s_pos``/``s_neg`` ``[batch]``; {keys} ``[batch]``; "
        f"params ``lambda`` (overridden by {lams}){margin}."
    )
    return loss


def _record(form: str, kind: str, side: str) -> Loss:
    name = f"{FORMS[form][0]}{kind}_{side}"
    needs = tuple(f"{KINDS[kind][0]}_{d}" for d in SIDES[side])
    return Loss(name, _loss(name, form, kind, side), FORMS[form][2], needs)


RECORDS = {r.name: r for r in (_record(f, k, s) for f in FORMS for k in KINDS for s in SIDES)}
"""The 12 losses by name: ``[pointwise_]{penalty,reward}_{relevant,irrelevant,both}``."""
