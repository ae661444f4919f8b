"""EqualizeIR product of experts with a frozen weak learner (SPEC §6.3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pipeline.config import Checked, ParamsError, Range, build
from pipeline.train.losses._pairwise import column
from pipeline.train.losses.common import Loss, PairScores, Prepared

if TYPE_CHECKING:
    from torch import Tensor

NAME = "poe"
Strategy = Literal["less_data", "weaker_model", "fewer_steps", "biased_data"]
WEAK_INPUTS = frozenset({"psi", "zeta"})
"""The per-document values the weak learner's training groups carry (``doc_bias``)."""


@dataclass(frozen=True)
class PoeConfig(Checked):
    """``alpha``: weight of the weak learner's log-probabilities (≥ 0, default 0.1).
    ``weak_strategy``: how f_B is made weak (required); ``weak_layers``: encoder layers of
    f_B for ``weaker_model`` (required there; fewer than the ranker's); ``weak_loss``: the
    loss term f_B trains with: a term's name (with its defaults) or one term mapped to its
    settings, as in a method's ``loss`` (``{penalty: {docs: both, lambda: 1.0}}``; ``-S
    methods.<m>.loss.poe.weak_loss.penalty.lambda=2``), loaded into the term's Config when
    params load (:meth:`weak_term`)."""

    weak_strategy: Strategy
    alpha: Annotated[float, Range(ge=0)] = 0.1
    weak_layers: Annotated[int, Range(ge=1)] | None = None
    weak_loss: str | Mapping[str, Mapping[str, Any] | None] = "margin"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.weak_strategy == "weaker_model" and self.weak_layers is None:
            raise ParamsError(
                "params key 'weak_layers' is required by weak_strategy 'weaker_model': the weak "
                "learner's encoder layers, fewer than the ranker's"
            )
        self.weak_term()  # its name and settings are checked where params load

    def weak_term(self) -> tuple[str, Any]:
        """``(name, config)`` of the weak learner's loss term. Refused (``ParamsError``
        naming ``weak_loss.<term>.<key>``): an unknown term or setting, a missing required
        one, and a term f_B cannot train with: a trainable term, one that prepares its own
        inputs, or one reading per-document values other than Ψ and ζ."""
        from pipeline.train.losses import get_record

        spec = self.weak_loss
        if isinstance(spec, str):
            name, settings = spec, {}
        elif len(spec) == 1:
            ((name, given),) = spec.items()
            settings = dict(given or {})
        else:
            raise ParamsError(
                "params key 'weak_loss': expected one loss term, its name or a mapping of the "
                f"name to its settings (`{{penalty: {{docs: both, lambda: 1.0}}}}`), got {spec!r}"
            )
        try:
            record = get_record(name)
        except ValueError as e:
            raise ParamsError(f"params key 'weak_loss': {e}") from e
        kind = ("is trainable" if record.trainable else "prepares its own inputs"
                if record.prepare is not None else None)  # fmt: skip
        cfg: Any = None
        if kind is None:
            cfg = build(record.config, settings, f"weak_loss.{name}", owner=f"loss {name!r}")
            reads = {k.removesuffix("_pos").removesuffix("_neg") for k in record.needs_of(cfg)}
            kind = None if reads <= WEAK_INPUTS else f"reads {sorted(reads)}"
        if kind is not None:
            raise ParamsError(
                f"params key 'weak_loss': {name!r} is not a term the weak learner trains with "
                f"(a score term reading at most {sorted(WEAK_INPUTS)}; it {kind})"
            )
        return name, cfg

    def check_params(self, params: Any, key: str) -> None:
        """``weaker_model`` is strictly smaller than the ranker ``params.model`` (SPEC
        §6.3); ``key``: the method entry's params key."""
        _check_weak_layers(self, params.model, key)


def _check_weak_layers(cfg: PoeConfig, model: Any, key: str) -> None:
    layers = cfg.weak_layers
    if cfg.weak_strategy != "weaker_model" or layers is None:
        return
    ranker = model.n_layers if model.n_layers is not None else _checkpoint_layers(model.name)
    if ranker is not None and layers >= ranker:
        raise ParamsError(
            f"params keys '{key}.weak_layers' ({layers}) and 'model.n_layers' "
            f"({ranker}{'' if model.n_layers is not None else ', all of ' + model.name}): "
            "the weaker_model weak learner must have strictly fewer layers than the ranker"
        )
    if model.train_layers is not None and layers < model.train_layers:
        raise ParamsError(
            f"params keys '{key}.weak_layers' ({layers}) and 'model.train_layers' "
            f"({model.train_layers}): the weak learner needs at least the trained layers"
        )


def _checkpoint_layers(name: str) -> int | None:
    """Encoder layers of the shipped checkpoints (others are only known once loaded)."""
    return {"all-MiniLM-L6-v2": 6, "tiny-random-bert": 2}.get(name)


def poe_log_probs(
    s_robust: Tensor, s_weak: Tensor, alpha: float, mask: Tensor | None = None
) -> Tensor:
    """``log z = log_softmax(α·log_softmax(s_B) + log_softmax(s_R))`` over the last axis
    (over the real entries of ``mask``). ``s_weak`` (f_B's scores) is detached: f_B is frozen.
    """
    import torch

    from pipeline.train.losses._listwise import masked_log_softmax

    if mask is None:
        mask = torch.ones_like(s_robust, dtype=torch.bool)
    weak = masked_log_softmax(s_weak.detach(), mask)
    robust = masked_log_softmax(s_robust, mask)
    return masked_log_softmax(alpha * weak.masked_fill(~mask, 0.0) + robust, mask)


def loss(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], cfg: PoeConfig) -> Tensor:
    """Cross-entropy on the positive of ``log z`` over each training group's candidates.

    Effect: where the weak (biased) learner f_B already ranks the pair right the combined
    distribution is already confident, so the robust model f_R gets a smaller gradient; where
    f_B is wrong it gets a larger one. ``alpha = 0`` is plain 2-way cross-entropy. Only f_R
    is used at test time.
    Paper: EqualizeIR (weak learner + product of experts for equal performance across query
    complexity).
    Inputs: scores ``s_pos``/``s_neg`` ``[batch]`` of f_R; ``batch['weak_pos']``,
    ``batch['weak_neg']`` ``[batch]``, f_B's scores of the same documents (``prepare``);
    ``alpha`` (default 0.1).
    """
    from pipeline.train.losses._listwise import grouped

    robust, mask = grouped(s_pos, s_neg, batch)
    weak, _ = grouped(
        column(batch, "weak_pos", s_pos, NAME), column(batch, "weak_neg", s_neg, NAME), batch, 0.0
    )
    log_z = poe_log_probs(robust, weak, float(cfg.alpha), mask)
    return -log_z[:, 0].mean()


def prepare(ctx: Prepared, cfg: PoeConfig) -> PairScores:
    """Train f_B by ``cfg.weak_strategy`` and score the fold's training pairs with it."""
    from pipeline.train.weak import weak_scores

    return {"weak": weak_scores(ctx, cfg)}


RECORD = Loss(NAME, PoeConfig, fn=loss, needs=("weak_pos", "weak_neg"), prepare=prepare)
