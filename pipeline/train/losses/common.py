"""The loss record: what the params loader, the trainer and the tests know of each loss term.

A method's training loss is a sum of weighted terms (as lightning-ir composes its loss
functions): ``methods.<m>.loss: {margin: {}, neutrality_kl: {}}`` trains on
``margin + coef · KL``. Each term is one record. A *score term* is a function of the pair
scores, ``fn(s_pos, s_neg, batch, cfg) -> Tensor``; a *trainable term* (AdvBERT's
adversary) is a module with parameters of its own, built by ``term(repr_dim, cfg, seed)``,
that reads the document representations. No torch is imported here or when the records
are collected (``pipeline.params`` checks names and configs); a loss module imports torch
inside its functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from pipeline.config import NoConfig, fields

if TYPE_CHECKING:
    from torch import Tensor

    from pipeline.train.losses._terms import LossTerm

LossFn: TypeAlias = "Callable[[Tensor, Tensor, Mapping[str, Tensor], Any], Tensor]"
"""``fn(s_pos, s_neg, batch, cfg)`` → a scalar (see ``pipeline.train.losses``)."""
TermFactory: TypeAlias = "Callable[[int, Any, int], LossTerm]"
"""``term(repr_dim, cfg, seed)`` → the trainable term (an ``nn.Module``)."""
PairScores: TypeAlias = "dict[str, dict[tuple[str, str], float]]"
"""Per-pair values by name (``weak`` → (query_id, doc_id) → f_B's score)."""


@dataclass(frozen=True)
class Prepared:
    """What a term's ``prepare`` hook may read before the method's ranker trains (one fold
    and seed): ``params`` (the whole ``Params``), the method's ``psi`` column, the fold's
    ordered ``triples``, the ``texts`` ``(queries, docs)``, ``doc_scores``, ``seed``, the
    precomputed frozen-bottom ``features`` and the fold's ``test`` candidates (``None`` when
    not given). A hook may leave runs of its own in ``runs`` (EqualizeIR: ``weak``, f_B's
    ranking of ``test``, so the weak learner's effectiveness is measured)."""

    params: Any
    psi: str
    triples: Any
    texts: tuple[Mapping[str, str], Mapping[str, str]]
    doc_scores: Any
    seed: int
    features: Mapping[Any, Any]
    test: Any = None
    runs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Loss:
    """One loss term.

    ``name``: the value in ``methods.<m>.loss``. ``config``: frozen dataclass of the keys it
    reads from the method entry (field ``lambda_`` is key ``lambda``; ``Literal`` choices and
    ``Annotated[..., Range(...)]`` bounds checked where params load; a field without a
    default is required). ``fn``: a score term (see ``LossFn``); ``term``: a trainable term
    (see ``TermFactory``); exactly one of them. ``needs``: the ``[pairs]`` batch keys a score
    term reads besides the scores (``psi_pos``, ``zeta_neg``, ``weak_pos``, …), or the
    per-document tensors a trainable term reads (``zeta``). ``weight``: the params key of the
    config field that scales the term in the method's sum (``coef``, ``adv_weight``, ``lambda``
    for a field ``lambda_``); ``None`` = 1. ``prepare(Prepared, cfg) -> PairScores``: per-pair
    values computed before training (EqualizeIR's weak learner). ``needs_for(cfg)``: the keys it
    reads under a config, where a setting chooses them (``needs`` is then every key it may
    read). A config may define ``check_params(params, key)`` for rules against other sections
    (``weak_layers`` below the ranker's layers). The function's docstring names its paper,
    formula and inputs.
    """

    name: str
    config: type = NoConfig
    fn: LossFn | None = None
    term: TermFactory | None = None
    needs: tuple[str, ...] = ()
    weight: str | None = None
    prepare: Callable[[Prepared, Any], PairScores] | None = None
    needs_for: Callable[[Any], tuple[str, ...]] | None = None

    def __post_init__(self) -> None:
        if (self.fn is None) == (self.term is None):
            raise TypeError(f"loss {self.name!r}: give exactly one of fn (a score term) or term")
        if self.weight is not None and self.weight not in fields(self.config):
            raise TypeError(
                f"loss {self.name!r}: weight={self.weight!r} is not a key of its config "
                f"{self.config.__name__} (keys: {sorted(fields(self.config))})"
            )

    def needs_of(self, cfg: Any) -> tuple[str, ...]:
        """The batch keys the term reads under ``cfg``: ``needs_for(cfg)`` where a setting
        chooses them (``docs`` of the penalty/reward terms), else ``needs``."""
        return self.needs if self.needs_for is None else self.needs_for(cfg)

    @property
    def trainable(self) -> bool:
        """Whether the term has parameters of its own (built by ``term``)."""
        return self.term is not None

    def scale(self, cfg: Any) -> float | None:
        """The term's weight in the sum under ``cfg`` (``None``: unweighted): the config
        field of params key ``weight`` (``weight="lambda"`` reads the field ``lambda_``)."""
        if self.weight is None:
            return None
        return float(getattr(cfg, fields(type(cfg))[self.weight].name))


Objective: TypeAlias = "tuple[tuple[str, Any], ...]"
"""A method's training loss: ``(loss term name, its config)`` per term, summed."""
