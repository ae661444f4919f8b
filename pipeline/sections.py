"""The params.yaml sections with one fixed config (no plug-in's settings, no torch import).

``score``, ``candidates``, ``train`` (the trainer's ``TrainConfig``), ``rerank``, ``report``,
``transfer``, and the shared keys of ``model`` and of ``evaluate``. The plug-ins' own settings
are not here: each record declares its config (a source's ``dataset.<source>``, an ordering's
``orderings.<name>``, a loss term's entry in ``methods.<m>.loss``, a model family's
``model.<arch>``, a metric family's ``evaluate.<metric>``), and ``pipeline.params`` loads them
from the records. """

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pipeline.config import Checked, ParamsError, Range


@dataclass(frozen=True)
class ScoreParams(Checked):
    """``tokenizer``: ``words`` (runs of \\w; Grep-BiasIR) or ``reference`` (split on one
    space, as the published MS MARCO code); the word lists; ``liwc_dic``: a LIWC ``.dic``
    (``None`` = the open list); ``neutrality_tau``: ζ = 1 up to tau representative words;
    ``complexity_parser``: an installed spaCy pipeline for Lu (2010) syntactic indices."""

    tokenizer: Literal["words", "reference"] = "words"
    wordlist_specific: str = "pipeline/resources/wordlists/wordlist_genderspecific.txt"
    wordlist_representative: str = "pipeline/resources/wordlists/wordlist_gender_representative.txt"
    liwc_dic: str | None = None
    neutrality_tau: Annotated[float, Range(ge=0)] = 1.0
    complexity_parser: str | None = None


@dataclass(frozen=True)
class CandidatesParams(Checked):
    """``top_k``: BM25 candidates per test query (reranked); ``train_top_k``: per training
    query (read only by the ``lws`` ordering), ``None`` = ``top_k``, ``0`` = none (paper scale
    without LWS: 400k training queries × the whole corpus is hours of BM25)."""

    top_k: Annotated[int, Range(ge=1)] = 50
    k1: Annotated[float, Range(ge=0)] = 0.9
    b: Annotated[float, Range(ge=0, le=1)] = 0.4
    train_top_k: Annotated[int, Range(ge=0)] | None = None
    fill_seed: int = 13  # test lists shorter than top_k: the random part of the fill


@dataclass(frozen=True)
class TransferParams(Checked):
    """The held-out collection every trained model is also evaluated on, without training
    on it (issue 21): ``name``, a data source (``genderbias-qa``, shipped; its settings are
    its own section ``dataset.<name with _>``), and which fold models of a seed rerank it
    (``fold_models``: ``first`` or ``all``)."""

    name: str = "genderbias-qa"
    fold_models: Literal["first", "all"] = "all"


@dataclass(frozen=True)
class RerankParams(Checked):
    batch_size: Annotated[int, Range(ge=1)] = 64


@dataclass(frozen=True)
class EvaluateParams:
    """``cutoffs`` of every rank-based metric, and each metric family's own settings
    (``evaluate.<family>``, its record's ``Config``: ``evaluate.awrf.target``,
    ``evaluate.exposure.temperature``), by family name. ``scopes``: other views of each run
    evaluated beside it (``judged``: each query's run condensed to its judged documents;
    ``pipeline.metrics.runner.SCOPES``)."""

    cutoffs: Annotated[list[int], Range(ge=1)] = field(default_factory=lambda: [10, 20])
    scopes: list[Literal["judged"]] = field(default_factory=lambda: ["judged"])
    metrics: Mapping[str, Any] = field(default_factory=dict)

    def settings(self, family: str) -> Any:
        """The config of metric family ``family`` (``None`` when not loaded)."""
        return self.metrics.get(family)


@dataclass(frozen=True)
class ReportParams(Checked):
    """The report's comparison with the baseline (SPEC §4.8): multiple-comparison correction,
    the paired bootstrap CI of each difference (pipeline/stats.py), and the verdicts' rule
    (issue 40, pipeline/report/verdict_rule.py): the ``primary`` fairness metric that decides
    "fairer" and the F/M ``balance_margin`` (male-wins share) of the equivalence test."""

    correction: Literal["bonferroni", "holm"] = "bonferroni"
    bootstrap_samples: Annotated[int, Range(ge=100)] = 10_000
    bootstrap_seed: Annotated[int, Range(ge=0)] = 0
    primary: Literal["NFaiRR@10", "ARaB-tf-abs@10", "LIWC@10", "gap-abs"] = "NFaiRR@10"
    balance_margin: Annotated[float, Range(gt=0, le=0.25)] = 0.05


@dataclass(frozen=True)
class ModelParams:
    """The ``model`` section (SPEC §5.1): what every family shares, and each family's own
    settings ``model.<arch>`` (its record's ``Config``), by family.

    ``arch``: the family; ``name``: the checkpoint (shipped all-MiniLM-L6-v2 or any Hugging
    Face id online); ``n_layers``: keep the first n encoder layers (``None`` = all);
    ``train_layers``: train only the top k layers on cached lower-layer states (``None`` =
    full fine-tuning); ``max_len``, ``q_len``: token budgets of a sequence and of a query.
    """

    arch: str = "bi_encoder"
    name: str = "all-MiniLM-L6-v2"
    n_layers: Annotated[int, Range(ge=1)] | None = None
    train_layers: Annotated[int, Range(ge=1)] | None = 1
    max_len: Annotated[int, Range(ge=8)] = 128
    q_len: Annotated[int, Range(ge=1)] = 32
    families: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def settings(self) -> Any:
        """The selected family's own config (``model.<arch>``)."""
        return self.families[self.arch]

    def common(self) -> dict[str, Any]:
        """The shared keys (what a saved model's ``ranker.json`` records beside the family's
        own settings)."""
        return {k: getattr(self, k) for k in COMMON_MODEL_KEYS}


COMMON_MODEL_KEYS = ("arch", "name", "n_layers", "train_layers", "max_len", "q_len")
"""The keys of ``model`` that every family shares."""


@dataclass(frozen=True)
class TrainConfig(Checked):
    """Training hyper-parameters: the ``train`` section (defaults = the default profile).

    ``batch_size``: training groups per step (one Grep-BiasIR query's F/M/N positives);
    ``group_size``: one positive + ``group_size − 1`` negatives of a query per group.
    ``warmup_steps`` wins over ``warmup_ratio`` (a share of the total steps) when given.
    ``max_steps`` caps the steps of ``epochs`` passes over the triples; each pass reads the
    triples in the same order. ``grad_clip`` ≤ 0 or ``None`` disables clipping. ``devices``
    > 1 trains on that many DDP ranks, each taking ``batch_size / devices`` triples of every
    global batch of ``batch_size``. ``length_window`` = W groups triples of similar length
    into batches within each run of W consecutive batches (``pipeline.train.loop.batch_plan``).
    ``checkpoint_every``: a resumable checkpoint every N steps. ``seeds``: train each method
    once per seed (``seed-<n>/`` folders; default 1, 2, 3); ``None`` = once, seeded by ``seed``.
    """

    seed: int = 42
    batch_size: Annotated[int, Range(ge=1)] = 3
    lr: Annotated[float, Range(gt=0)] = 1.0e-4
    epochs: Annotated[int, Range(ge=1)] = 1
    group_size: Annotated[int, Range(ge=2)] = 6
    warmup_ratio: Annotated[float, Range(ge=0, le=1)] = 0.1
    warmup_steps: Annotated[int, Range(ge=0)] | None = None
    max_steps: Annotated[int, Range(ge=1)] | None = None
    log_every: Annotated[int, Range(ge=1)] = 5
    grad_clip: float | None = 1.0
    threads: Annotated[int, Range(ge=1)] = 1
    workers: Annotated[int, Range(ge=1)] = 2
    device: str = "auto"
    devices: Annotated[int, Range(ge=1)] = 1
    checkpoint_every: Annotated[int, Range(ge=1)] | None = None
    seeds: Annotated[list[int], Range(ge=0)] | None = field(default_factory=lambda: [1, 2, 3])
    length_window: Annotated[int, Range(ge=1)] | None = None
    keep_models: Literal["first", "all"] = "first"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.batch_size % self.devices:
            raise ParamsError(
                f"params key 'batch_size': {self.batch_size} is not a multiple of devices "
                f"({self.devices}); every process takes batch_size / devices triples of each batch"
            )
        if self.seeds is not None and (not self.seeds or len(set(self.seeds)) != len(self.seeds)):
            raise ParamsError(
                f"params key 'seeds': {self.seeds!r} must be a non-empty list of distinct "
                "seeds, or null (one model per method, seeded by train.seed)"
            )

    def total_steps(self, n_groups: int) -> int:
        """Optimiser steps for ``n_groups`` training groups."""
        steps = self.epochs * math.ceil(n_groups / self.batch_size)
        return min(steps, self.max_steps) if self.max_steps is not None else steps

    def warmup(self, total: int) -> int:
        """Warm-up steps: ``warmup_steps`` if set, else ``round(warmup_ratio × total)``."""
        return (
            self.warmup_steps if self.warmup_steps is not None else round(self.warmup_ratio * total)
        )

    def seed_runs(self) -> list[tuple[int, str]]:
        """``(seed, subfolder)`` per trained model of a method: ``[(seed, "")]`` without
        ``seeds`` (models/<m>/, runs/<m>/, eval/<m>/), else one ``seed-<n>`` folder each."""
        if self.seeds is None:
            return [(self.seed, "")]
        return [(s, f"seed-{s}") for s in self.seeds]

    def kept_runs(self) -> list[tuple[int, str]]:
        """The ``seed_runs()`` whose models are kept (``keep_models``)."""
        runs = self.seed_runs()
        return runs if self.keep_models == "all" else runs[:1]


@dataclass(frozen=True)
class ControlParams(Checked):
    """One entry under ``controls:`` (issue 29): the methods it is a control of, each
    compared with it directly (treatment − control, by the report's test), and what the
    pair isolates (one line, shown in the report's *Controls* table)."""

    of: list[str]
    isolates: str = ""
