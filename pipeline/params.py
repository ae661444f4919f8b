"""Typed, validated view of params.yaml.

Every section is a typed config (``pipeline.config``): the plug-ins' own configs (a data
source's ``dataset.<source>``, an ordering's ``orderings.<name>``, a method's loss terms)
and the sections below. Loading refuses unknown keys (with the closest known one), missing
required keys and ill-typed or out-of-range values with one error naming the key (e.g.
``methods.penalty_irrelevant.lambda``) and the fix, so a typo in ``dvc exp run -S …`` fails
at once instead of silently running the default. Defaults live in the configs only;
params.yaml repeats them (a test checks that they agree).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml

from pipeline.config import (
    Checked,
    ParamsError,
    Range,
    build,
    did_you_mean,
    fields,
    key_of,
    lookup,
)
from pipeline.data import SOURCES, get_source
from pipeline.models.config import ModelConfig
from pipeline.ordering import ORDERINGS, get_ordering
from pipeline.ordering.common import Direction, PsiColumn
from pipeline.train.config import TrainConfig
from pipeline.train.losses import LOSSES, Objective, get_record

DEFAULT_PARAMS = "params.yaml"

__all__ = [
    "DEFAULT_PARAMS",
    "FIRST_STAGE",
    "REFERENCE_ROWS",
    "ZERO_SHOT",
    "CandidatesParams",
    "DatasetParams",
    "EvaluateParams",
    "MethodParams",
    "ModelParams",
    "Params",
    "ParamsError",
    "ReportParams",
    "RerankParams",
    "ScoreParams",
    "TrainParams",
    "TransferParams",
    "get_method",
    "load_params",
    "parse_params",
]


@dataclass(frozen=True)
class DatasetParams:
    """The ``dataset`` section: ``name`` picks the source; every source owns its own
    subsection ``dataset.<section>`` (``grep_biasir``, ``msmarco_passage``, …), loaded into
    its record's ``Config`` (``pipeline/data``)."""

    name: str = "grep-biasir"
    sources: Mapping[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> Any:
        """The config of the selected source."""
        return self.sources[get_source(self.name).section]

    @property
    def folds(self) -> int:
        """Cross-validation folds of the selected source (1 = one train/test split)."""
        return int(getattr(self.source, "folds", 1))


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


ModelParams = ModelConfig  # the `model` section is the model families' config
TrainParams = TrainConfig  # the `train` section is the trainer's config


@dataclass(frozen=True)
class TransferParams(Checked):
    """The held-out collection every trained model is also evaluated on, without training
    on it (issue 21): ``name`` (``genderbias-qa``, shipped), its ``splits``, which fold
    models of a seed rerank it (``fold_models``: ``first`` or ``all``) and ``max_queries``
    (``None``: all; N: the first N question ids and their documents, for small profiles: a
    cross-encoder reranks every question's ``candidates.top_k`` pairs per model)."""

    name: Literal["genderbias-qa"] = "genderbias-qa"
    splits: list[Literal["test", "train"]] = field(default_factory=lambda: ["test"])
    fold_models: Literal["first", "all"] = "first"
    max_queries: Annotated[int, Range(ge=1)] | None = None


@dataclass(frozen=True)
class RerankParams(Checked):
    batch_size: Annotated[int, Range(ge=1)] = 64


@dataclass(frozen=True)
class EvaluateParams(Checked):
    """``cutoffs`` of every rank-based metric; ``awrf_target`` (SPEC §4.6);
    ``exposure_temperature``: Plackett-Luce temperature on the per-query z-scored scores."""

    cutoffs: Annotated[list[int], Range(ge=1)] = field(default_factory=lambda: [10, 20])
    awrf_target: Literal["uniform", "relevant"] = "uniform"
    exposure_temperature: Annotated[float, Range(gt=0)] = 1.0


@dataclass(frozen=True)
class ReportParams(Checked):
    """The report's comparison with the baseline (SPEC §4.8): multiple-comparison correction
    and the paired bootstrap CI of each difference (pipeline/stats.py)."""

    correction: Literal["bonferroni", "holm"] = "bonferroni"
    bootstrap_samples: Annotated[int, Range(ge=100)] = 10_000
    bootstrap_seed: Annotated[int, Range(ge=0)] = 0


@dataclass(frozen=True)
class MethodParams:
    """One entry under ``methods:``: how its training data is ordered and its loss terms.

    ``loss``: the names of its loss terms (``pipeline.train.losses``; one name or a list),
    summed with their weights; ``terms``: each term with its config, loaded from the entry's
    other keys (a term's config fields are keys of the entry: ``lambda``, ``coef``, …).
    ``psi``: the Ψ column its loss reads (required: ``order@<method>`` records it).
    ``direction``: the per-method setting of orderings that list it in their record's
    ``method_keys`` (curriculum). ``ordering_params``: overrides of the ordering's own
    section (``orderings.<o>``) for this method only, e.g. ``{by_query: false}``: a control
    differs from its method by one key.
    """

    ordering: str
    loss: tuple[str, ...]
    psi: PsiColumn
    terms: Objective = ()
    direction: Direction | None = None
    ordering_params: Mapping[str, Any] = field(default_factory=dict)

    def config(self, loss: str) -> Any:
        """The config of loss term ``loss``."""
        return dict(self.terms)[loss]

    def settings(self) -> dict[str, Any]:
        """The entry as params.yaml spells it (set values only): for provenance records."""
        loss = self.loss[0] if len(self.loss) == 1 else list(self.loss)
        out: dict[str, Any] = {"ordering": self.ordering, "loss": loss, "psi": self.psi}
        if self.direction is not None:
            out["direction"] = self.direction
        if self.ordering_params:
            out["ordering_params"] = dict(self.ordering_params)
        for _, cfg in self.terms:
            out |= {key_of(k): v for k, v in dataclasses.asdict(cfg).items() if v is not None}
        return out


@dataclass(frozen=True)
class Params:
    dataset: DatasetParams
    score: ScoreParams
    candidates: CandidatesParams
    model: ModelParams
    train: TrainParams
    rerank: RerankParams
    evaluate: EvaluateParams
    methods: dict[str, MethodParams]
    # `orderings.<name>` → that ordering's Config (pipeline/ordering, one record each)
    orderings: dict[str, Any] = field(default_factory=dict)
    report: ReportParams = field(default_factory=ReportParams)
    transfer: TransferParams = field(default_factory=TransferParams)

    def ordering_config(self, method: str) -> Any:
        """The ordering Config that ``method`` trains with: ``orderings.<o>`` with the
        method's ``ordering_params`` applied."""
        m = self.methods[method]
        return dataclasses.replace(self.orderings[m.ordering], **m.ordering_params)

    def seed_runs_of(self, method: str) -> list[tuple[int, str]]:
        """``(seed, seed folder)`` of each run of ``method``: a trained method's
        ``train.seed_runs()``; one run seeded by ``train.seed`` for an untrained row
        (``zero-shot``), which the train stage's seeds do not multiply."""
        return self.train.seed_runs() if method in self.methods else [(self.train.seed, "")]


# Reserved: the report's reference row evaluates the BM25 candidates under this name.
FIRST_STAGE = "bm25"
# Reserved: the untrained checkpoint of `model.arch`, evaluated like a method (SPEC §5.1).
ZERO_SHOT = "zero-shot"
REFERENCE_ROWS = (FIRST_STAGE, ZERO_SHOT)
SECTIONS: dict[str, type] = {
    "score": ScoreParams,
    "candidates": CandidatesParams,
    "model": ModelConfig,
    "train": TrainConfig,
    "rerank": RerankParams,
    "evaluate": EvaluateParams,
    "report": ReportParams,
    "transfer": TransferParams,
}
"""The sections with one fixed config (``dataset``, ``orderings`` and ``methods`` are made
of plug-ins' configs)."""
METHOD_KEYS = ("ordering", "loss", "psi")
"""Keys every method entry has."""
ORDERING_PARAMS = "ordering_params"
"""A method entry's overrides of its ordering's section."""


def parse_params(raw: Mapping[str, Any]) -> Params:
    """Validate a params mapping (as read from params.yaml) into `Params`."""
    known = [f.name for f in dataclasses.fields(Params)]
    unknown = sorted(str(k) for k in set(raw) - set(known))
    if unknown:
        raise ParamsError(
            f"params key {unknown[0]!r} is unknown; known sections: {sorted(known)}"
            + did_you_mean(unknown[0], known)
        )
    built: dict[str, Any] = {
        name: build(cls, raw.get(name), name) for name, cls in SECTIONS.items()
    }
    built["dataset"] = _dataset(raw.get("dataset"))
    built["orderings"] = _orderings(raw.get("orderings"))
    methods_raw = raw.get("methods")
    if not isinstance(methods_raw, Mapping) or not methods_raw:
        raise ParamsError("params key 'methods' must map at least one method name to its settings")
    built["methods"] = {
        str(m): _method(str(m), v, built["orderings"]) for m, v in methods_raw.items()
    }
    params = Params(**built)
    _check_methods(params)
    return params


def _dataset(raw: Any) -> DatasetParams:
    """``dataset`` → its ``name`` and every source's subsection loaded into its Config."""
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise ParamsError(f"params key 'dataset': expected a mapping, got {raw!r}")
    sections = {r.section: r for r in SOURCES.values()}
    allowed = ["name", *sections]
    for key in raw:
        if key not in allowed:
            owners = sorted(s for s, r in sections.items() if key in fields(r.config))
            where = f"; it is a key of a source's own section: {owners}" if owners else ""
            raise ParamsError(
                f"params key 'dataset.{key}' is unknown; known keys of 'dataset': {allowed}"
                + (where or did_you_mean(key, allowed))
            )
    name = raw.get("name", DatasetParams.name)
    try:
        get_source(str(name))
    except ValueError as e:
        raise ParamsError(f"params key 'dataset.name': {e}") from e
    configs: dict[str, Any] = {
        s: build(r.config, raw.get(s), f"dataset.{s}") for s, r in sections.items()
    }
    return DatasetParams(str(name), configs)


def _orderings(raw: Any) -> dict[str, Any]:
    """`orderings:` → ``{name: Config}``, each section loaded into its record's Config."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ParamsError(f"params key 'orderings': expected a mapping, got {raw!r}")
    out: dict[str, Any] = {}
    for name, section in raw.items():
        try:
            record = get_ordering(str(name))
        except ValueError as e:
            raise ParamsError(f"params key 'orderings.{name}': {e}") from e
        out[str(name)] = build(record.config, section, f"orderings.{name}")
    return out


def _method(name: str, raw: Any, orderings: Mapping[str, Any]) -> MethodParams:
    """One ``methods:`` entry: its ordering, its loss terms each with its config (built from
    the entry's keys), its Ψ column and per-method ordering settings."""
    key = f"methods.{name}"
    if not isinstance(raw, Mapping):
        raise ParamsError(f"params key {key!r}: expected a mapping, got {raw!r}")
    overrides = raw.get(ORDERING_PARAMS) or {}
    raw = {k: v for k, v in raw.items() if k != ORDERING_PARAMS}
    for k in METHOD_KEYS:
        if k not in raw:
            raise ParamsError(f"params key '{key}.{k}' is required but missing")
    names = _loss_names(raw["loss"], f"{key}.loss")
    order_keys = sorted({k for r in ORDERINGS.values() for k in r.method_keys})
    base = {k: raw[k] for k in (*METHOD_KEYS, *order_keys) if k in raw}
    own = {k: v for k, v in raw.items() if k not in base}
    takes = {k: n for n in names for k in fields(get_record(n).config)}
    for k in own:
        if k not in takes:
            raise ParamsError(_not_taken(key, str(k), names, [*base, *takes]))
    terms: Objective = tuple(
        (n, build(get_record(n).config, _keys_of(n, own), key, owner=f"loss {n!r}")) for n in names
    )
    plain = build(_Entry, {k: v for k, v in base.items() if k != "loss"}, key)
    chosen = _ordering_params(plain.ordering, overrides, orderings, f"{key}.{ORDERING_PARAMS}")
    return MethodParams(plain.ordering, names, plain.psi, terms, plain.direction, chosen)


def _ordering_params(
    ordering: str, overrides: Any, orderings: Mapping[str, Any], key: str
) -> dict[str, Any]:
    """A method's ``ordering_params``, validated by building its ordering's Config from
    ``orderings.<o>`` with them applied (unknown keys, types and ranges, as for the section)."""
    if not overrides:
        return {}
    if not isinstance(overrides, Mapping):
        raise ParamsError(f"params key {key!r}: expected a mapping, got {overrides!r}")
    try:
        record = get_ordering(ordering)
    except ValueError as e:
        raise ParamsError(f"params key {key!r}: {e}") from e
    section = orderings.get(ordering)
    base = dataclasses.asdict(section) if section is not None else {}
    cfg: Any = build(record.config, {**{key_of(k): v for k, v in base.items()}, **overrides}, key)
    names = {str(k): fields(record.config)[str(k)].name for k in overrides}
    return {name: getattr(cfg, name) for name in names.values()}


@dataclass(frozen=True)
class _Entry(Checked):
    """The keys of a method entry besides its loss terms' (validated here)."""

    ordering: str
    psi: PsiColumn
    direction: Direction | None = None


def _keys_of(loss: str, own: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in own.items() if k in fields(get_record(loss).config)}


def _loss_names(value: Any, key: str) -> tuple[str, ...]:
    """``loss``: one name or a non-empty list of distinct names, each a known loss term."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ParamsError(
            f"params key {key!r}: expected a loss name or a list of them, got {value!r}"
        )
    if len(set(names)) != len(names):
        raise ParamsError(f"params key {key!r}: {names} names a loss twice")
    for n in names:
        try:
            lookup(LOSSES, n, "loss")
        except ValueError as e:
            raise ParamsError(f"params key {key!r}: {e}") from e
    return tuple(names)


def _not_taken(key: str, k: str, names: tuple[str, ...], allowed: list[str]) -> str:
    """The error of a method key that none of its loss terms (nor the entry) takes."""
    owners = sorted(n for n, r in LOSSES.items() if k in fields(r.config))
    hint = f" (a key of {owners})" if owners else did_you_mean(k, allowed)
    return (
        f"params key '{key}.{k}' is unknown: its loss {list(names)} takes no {k!r}{hint}; "
        f"keys this entry takes: {sorted(allowed)}. Remove it, or add a loss term that reads it"
    )


def _check_methods(params: Params) -> None:
    for reserved in REFERENCE_ROWS:
        if reserved in params.methods:
            raise ParamsError(
                f"params key 'methods.{reserved}': the name is reserved for a reference row "
                "of the report; rename the method"
            )
    for name, m in params.methods.items():
        _check_ordering(params, name, m)
        for _, cfg in m.terms:
            check = getattr(cfg, "check_params", None)
            if check is not None:  # rules against other sections (a term's config says)
                check(params, f"methods.{name}")


def _check_ordering(params: Params, name: str, m: MethodParams) -> None:
    """The method's ordering exists, has its `orderings.<o>` section (DVC's order stage
    depends on it) and takes every per-method ordering key the method sets."""
    key = f"methods.{name}.ordering"
    try:
        record = get_ordering(m.ordering)
    except ValueError as e:
        raise ParamsError(f"params key {key!r}: {e}") from e
    if m.ordering not in params.orderings:
        raise ParamsError(
            f"params key 'orderings.{m.ordering}' is missing: method {name!r} uses ordering "
            f"{m.ordering!r} and its order stage depends on that section; add "
            f"`{m.ordering}: {{}}` under `orderings:` (or its params)"
        )
    for k in sorted({k for r in ORDERINGS.values() for k in r.method_keys}):
        if getattr(m, k) is not None and k not in record.method_keys:
            takers = sorted(o for o, r in ORDERINGS.items() if k in r.method_keys)
            raise ParamsError(
                f"params key 'methods.{name}.{k}': ordering {m.ordering!r} takes no {k} "
                f"(only {takers} do); remove the key"
            )


def load_params(path: str | Path = DEFAULT_PARAMS) -> Params:
    """Read and validate params.yaml."""
    p = Path(path)
    if not p.exists():
        raise ParamsError(f"{p}: params file not found; run from the repository root")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ParamsError(f"{p}: malformed YAML: {e}") from e
    try:
        return parse_params(raw)
    except ParamsError as e:
        raise ParamsError(f"{p}: {e}") from e


def get_method(params: Params, name: str) -> MethodParams:
    """The settings of one method; an unknown name lists the known ones."""
    if name not in params.methods:
        raise ParamsError(
            f"unknown method {name!r}; known (under `methods:` in params.yaml): "
            f"{sorted(params.methods)}"
        )
    return params.methods[name]
