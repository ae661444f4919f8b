"""The penalty/reward losses as one table: form × kind, the side a setting (SPEC §6.2).

Each document of a triple gets an offset ``a = sign · λ_side · value`` on its score where its
side is active (0 elsewhere); ``docs`` says which sides are: the positive (``relevant``), the
negative (``irrelevant``) or ``both``. The ``penalty`` adds Ψ: a biased document counts as
scored higher, so biased positives are pushed up less and biased negatives down harder. The
``reward`` subtracts ζ: neutral positives are pushed up harder and neutral negatives down
less. **Decision**: the reward reads ζ as the paper says (the published code uses Ψ).
With ``docs: both``, ``lambda_pos`` / ``lambda_neg`` override ``lambda`` per side
(SPEC §6.2). Every λ is ≥ 0 (the sign is the kind's) and so is the hinge ``margin``.

A method names the term with its settings: ``loss: {penalty: {docs: relevant, lambda:
1.0}}`` is the regularisation paper's ``penalty_relevant``.

Paper: Seyedsalehi et al., loss-regularisation journal paper (penalty and reward terms; code:
shirinssalehi/LossRegularizationJournal); ``penalty`` on ``irrelevant`` documents with
Ψ = |psi_bool| is the bias-aware loss of Seyedsalehi et al., EDBT 2022.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pipeline.config import Checked, ParamsError, Range
from pipeline.train.losses._pairwise import column, hinge, lambda_for
from pipeline.train.losses.common import Loss, LossFn

if TYPE_CHECKING:
    from torch import Tensor

Offset: TypeAlias = "Tensor | float"
Docs = Literal["relevant", "irrelevant", "both"]
Strength = Annotated[float, Range(ge=0)]
PAPER = "Seyedsalehi et al., loss-regularisation journal paper (penalty and reward terms)"


@dataclass(frozen=True)
class PointwiseConfig(Checked):
    """``docs``: the documents that get the offset (required); ``lambda`` (≥ 0), or with
    ``docs: both`` one per side (``lambda_pos``, ``lambda_neg``, each overriding ``lambda``):
    every active side needs one."""

    docs: Docs
    lambda_: Strength | None = None
    lambda_pos: Strength | None = None
    lambda_neg: Strength | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.docs != "both":
            extra = next((s for s in ("pos", "neg") if getattr(self, f"lambda_{s}") is not None),
                         None)  # fmt: skip
            if extra is not None:
                raise ParamsError(
                    f"params key 'lambda_{extra}': a per-side λ needs `docs: both` (this term "
                    f"offsets only the {self.docs} documents); use `lambda`"
                )
            if self.lambda_ is None:
                raise ParamsError("params key 'lambda' is required; add `lambda: <value>`")
            return
        unset = [s for s in ("pos", "neg") if getattr(self, f"lambda_{s}") is None]
        if self.lambda_ is None and unset:
            raise ParamsError(
                f"params key 'lambda' is required (or both 'lambda_pos' and 'lambda_neg'; "
                f"'lambda_{unset[0]}' is not set); add `lambda: <value>`"
            )


@dataclass(frozen=True)
class PairwiseConfig(PointwiseConfig):
    """As the pointwise form, and the hinge ``margin`` (≥ 0, default 1)."""

    margin: Annotated[float, Range(ge=0)] = 1.0


def pairwise(s_pos: Tensor, s_neg: Tensor, a_pos: Offset, a_neg: Offset, cfg: Any) -> Tensor:
    """``mean(max(0, m − (tanh s⁺ + a⁺) + (tanh s⁻ + a⁻)))``."""
    return hinge(s_pos, s_neg, a_pos, a_neg, cfg.margin)


def pointwise(s_pos: Tensor, s_neg: Tensor, a_pos: Offset, a_neg: Offset, cfg: Any) -> Tensor:
    """``mean((sigmoid(s + a) − y)²)`` over all ``2 × batch`` documents (y⁺ = 1, y⁻ = 0)."""
    import torch  # here, not at load: the table is read without torch (pipeline.params)

    p_pos, p_neg = (s_pos + a_pos).sigmoid(), (s_neg + a_neg).sigmoid()
    return torch.cat([(p_pos - 1.0) ** 2, p_neg**2]).mean()


FORMS: dict[str, tuple[str, Callable[..., Tensor], type]] = {
    "pairwise": ("", pairwise, PairwiseConfig),
    "pointwise": ("pointwise_", pointwise, PointwiseConfig),
}
"""form → (name prefix, formula of the scores and offsets ``a⁺, a⁻``, its Config)."""
KINDS = {"penalty": ("psi", +1.0), "reward": ("zeta", -1.0)}
"""kind → (the per-document value it reads, sign of the offset)."""
SIDES: dict[str, tuple[str, ...]] = {
    "relevant": ("pos",), "irrelevant": ("neg",), "both": ("pos", "neg"),
}  # fmt: skip
"""``docs`` → the documents of a triple that get an offset."""


def _loss(name: str, form: str, kind: str) -> LossFn:
    formula, (value, sign) = FORMS[form][1], KINDS[kind]

    def loss(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], cfg: Any) -> Tensor:
        a: dict[str, Tensor | float] = {"pos": 0.0, "neg": 0.0}
        for d, s in (("pos", s_pos), ("neg", s_neg)):
            if d in SIDES[cfg.docs]:
                a[d] = sign * lambda_for(cfg, d) * column(batch, f"{value}_{d}", s, name)
        return formula(s_pos, s_neg, a["pos"], a["neg"], cfg)

    margin = " and ``margin`` (≥ 0, default 1)" if form == "pairwise" else ""
    loss.__name__ = loss.__qualname__ = name
    formula_text = (formula.__doc__ or "").strip().rstrip(".")
    loss.__doc__ = (
        f"{formula_text} with ``a = {'+' if sign > 0 else '−'}λ·{value}`` on the documents "
        f"``docs`` names ({kind}, SPEC §6.2; see ``pipeline.train.losses.regularised``).\n\n"
        f"Paper: {PAPER}.\nInputs: scores ``s_pos``/``s_neg`` ``[batch]``; "
        f"``batch['{value}_pos']`` (``docs`` relevant or both), ``batch['{value}_neg']`` "
        f"(irrelevant or both) ``[batch]``; ``docs``; ``lambda`` ≥ 0 (per side with both: "
        f"``lambda_pos`` / ``lambda_neg``){margin}."
    )
    return loss


def _sides(value: str, cfg: Any) -> tuple[str, ...]:
    """The batch keys a term of ``value`` (psi, zeta) reads under ``cfg.docs``."""
    return tuple(f"{value}_{d}" for d in SIDES[cfg.docs])


def _record(form: str, kind: str) -> Loss:
    prefix, _, config = FORMS[form]
    name, value = f"{prefix}{kind}", KINDS[kind][0]
    needs = (f"{value}_pos", f"{value}_neg")
    return Loss(name, config, fn=_loss(name, form, kind), needs=needs,
                needs_for=functools.partial(_sides, value))  # fmt: skip


RECORDS = {r.name: r for r in (_record(f, k) for f in FORMS for k in KINDS)}
"""Every form × kind: ``[pointwise_]{penalty,reward}``, each with its ``docs`` setting."""
globals().update({name: r.fn for name, r in RECORDS.items()})
# each term's function by its name at module level, where pickle looks it up
