"""The penalty/reward losses as one table: form × kind × side (SPEC §6.2).

Each document of a triple gets an offset ``a = sign · λ_side · value`` on its score where its
side is active (0 elsewhere). The ``penalty`` adds Ψ: a biased document counts as scored
higher, so biased positives are pushed up less and biased negatives down harder. The
``reward`` subtracts ζ: neutral positives are pushed up harder and neutral negatives down
less. **Decision**: the reward reads ζ as the paper says (the published code uses Ψ).
The variants of both sides take ``lambda_pos`` / ``lambda_neg`` to override ``lambda`` per
side (SPEC §6.2).

Paper: Seyedsalehi et al., loss-regularisation journal paper (penalty and reward terms; code:
shirinssalehi/LossRegularizationJournal); ``penalty_irrelevant`` with Ψ = |psi_bool| is the
bias-aware loss of Seyedsalehi et al., EDBT 2022.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from pipeline.config import Checked, ParamsError
from pipeline.train.losses._pairwise import column, hinge, lambda_for
from pipeline.train.losses.common import Loss, LossFn

if TYPE_CHECKING:
    from torch import Tensor

Offset: TypeAlias = "Tensor | float"
PAPER = "Seyedsalehi et al., loss-regularisation journal paper (penalty and reward terms)"


@dataclass(frozen=True)
class OneSideConfig(Checked):
    """λ of the one side that gets an offset (``lambda``, required)."""

    lambda_: float


@dataclass(frozen=True)
class BothSidesConfig(Checked):
    """λ of both sides (``lambda``), or per side (``lambda_pos``, ``lambda_neg``, each
    overriding ``lambda``): every side needs one."""

    lambda_: float | None = None
    lambda_pos: float | None = None
    lambda_neg: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        unset = [s for s in ("pos", "neg") if getattr(self, f"lambda_{s}") is None]
        if self.lambda_ is None and unset:
            raise ParamsError(
                f"params key 'lambda' is required (or both 'lambda_pos' and 'lambda_neg'; "
                f"'lambda_{unset[0]}' is not set); add `lambda: <value>`"
            )


@dataclass(frozen=True)
class PairwiseOneSideConfig(OneSideConfig):
    """λ of the one side, and the hinge ``margin`` (default 1)."""

    margin: float = 1.0


@dataclass(frozen=True)
class PairwiseBothConfig(BothSidesConfig):
    """λ as in the pointwise form, and the hinge ``margin`` (default 1)."""

    margin: float = 1.0


def pairwise(s_pos: Tensor, s_neg: Tensor, a_pos: Offset, a_neg: Offset, cfg: Any) -> Tensor:
    """``mean(max(0, m − (tanh s⁺ + a⁺) + (tanh s⁻ + a⁻)))``."""
    return hinge(s_pos, s_neg, a_pos, a_neg, cfg.margin)


def pointwise(s_pos: Tensor, s_neg: Tensor, a_pos: Offset, a_neg: Offset, cfg: Any) -> Tensor:
    """``mean((sigmoid(s + a) − y)²)`` over all ``2 × batch`` documents (y⁺ = 1, y⁻ = 0)."""
    import torch  # here, not at load: the table is read without torch (pipeline.params)

    p_pos, p_neg = (s_pos + a_pos).sigmoid(), (s_neg + a_neg).sigmoid()
    return torch.cat([(p_pos - 1.0) ** 2, p_neg**2]).mean()


FORMS: dict[str, tuple[str, Callable[..., Tensor], type, type]] = {
    "pairwise": ("", pairwise, PairwiseOneSideConfig, PairwiseBothConfig),
    "pointwise": ("pointwise_", pointwise, OneSideConfig, BothSidesConfig),
}
"""form → (name prefix, formula of the scores and offsets ``a⁺, a⁻``, Config of a one-side
variant, Config of a both-sides variant)."""
KINDS = {"penalty": ("psi", +1.0), "reward": ("zeta", -1.0)}
"""kind → (the per-document value it reads, sign of the offset)."""
SIDES = {"relevant": ("pos",), "irrelevant": ("neg",), "both": ("pos", "neg")}
"""side → the documents of a triple that get an offset."""


def _loss(name: str, form: str, kind: str, side: str) -> LossFn:
    formula, (value, sign), active = FORMS[form][1], KINDS[kind], SIDES[side]

    def loss(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], cfg: Any) -> Tensor:
        a: dict[str, Tensor | float] = {"pos": 0.0, "neg": 0.0}
        for d, s in (("pos", s_pos), ("neg", s_neg)):
            if d in active:
                a[d] = sign * lambda_for(cfg, d) * column(batch, f"{value}_{d}", s, name)
        return formula(s_pos, s_neg, a["pos"], a["neg"], cfg)

    keys = ", ".join(f"``batch['{value}_{d}']``" for d in active)
    lams = " / ".join(f"``lambda_{d}``" for d in active)
    lam = f"``lambda`` (overridden by {lams})" if len(active) > 1 else "``lambda``"
    margin = " and ``margin`` (default 1)" if form == "pairwise" else ""
    loss.__name__ = loss.__qualname__ = name
    formula_text = (formula.__doc__ or "").strip().rstrip(".")
    loss.__doc__ = (
        f"{formula_text} with ``a = {'+' if sign > 0 else '−'}λ·{value}`` "
        f"on the {side} side ({kind}, SPEC §6.2; see ``pipeline.train.losses.regularised``).\n\n"
        f"Paper: {PAPER}.\nInputs: scores ``s_pos``/``s_neg`` ``[batch]``; {keys} ``[batch]``; "
        f"{lam}{margin}."
    )
    return loss


def _record(form: str, kind: str, side: str) -> Loss:
    prefix, _, one_side, both_sides = FORMS[form]
    name = f"{prefix}{kind}_{side}"
    needs = tuple(f"{KINDS[kind][0]}_{d}" for d in SIDES[side])
    config = both_sides if len(SIDES[side]) > 1 else one_side
    return Loss(name, config, fn=_loss(name, form, kind, side), needs=needs)


RECORDS = {r.name: r for r in (_record(f, k, s) for f in FORMS for k in KINDS for s in SIDES)}
"""Every form × kind × side: ``[pointwise_]{penalty,reward}_{relevant,irrelevant,both}``."""
