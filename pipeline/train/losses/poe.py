"""EqualizeIR product of experts with a frozen weak learner (SPEC §6.3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pipeline.config import Checked, ParamsError, Range
from pipeline.train.losses._pairwise import column
from pipeline.train.losses.common import Loss, PairScores, Prepared

if TYPE_CHECKING:
    from torch import Tensor

NAME = "poe"
Strategy = Literal["less_data", "weaker_model", "fewer_steps", "biased_data"]


@dataclass(frozen=True)
class PoeConfig(Checked):
    """``alpha``: weight of the weak learner's log-probabilities (≥ 0, default 0.1).
    ``weak_strategy``: how f_B is made weak (required); ``weak_layers``: encoder layers of
    f_B for ``weaker_model`` (required there; fewer than the ranker's); ``weak_loss``: the
    loss term f_B trains with (its config's defaults)."""

    weak_strategy: Strategy
    alpha: Annotated[float, Range(ge=0)] = 0.1
    weak_layers: Annotated[int, Range(ge=1)] | None = None
    weak_loss: str = "margin"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.weak_strategy == "weaker_model" and self.weak_layers is None:
            raise ParamsError(
                "params key 'weak_layers' is required by weak_strategy 'weaker_model': the weak "
                "learner's encoder layers, fewer than the ranker's"
            )

    def check_params(self, params: Any, key: str) -> None:
        """``weak_loss`` is a score term; ``weaker_model`` is strictly smaller than the
        ranker ``params.model`` (SPEC §6.3); ``key``: the method entry's params key."""
        from pipeline.train.losses import get_record

        try:
            weak = get_record(self.weak_loss)
        except ValueError as e:
            raise ParamsError(f"params key '{key}.weak_loss': {e}") from e
        if weak.trainable or weak.prepare is not None:
            raise ParamsError(
                f"params key '{key}.weak_loss': {self.weak_loss!r} is not a plain score term"
            )
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
