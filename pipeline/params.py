"""Typed, validated view of params.yaml.

Every section is a typed config (``pipeline.config``): the fixed sections
(``pipeline.sections``) and the plug-ins' own settings, each loaded into the ``Config`` its
record declares (``pipeline.plugins``): a data source's ``dataset.<source>``, an ordering's
``orderings.<name>``, each loss term of ``methods.<m>.loss`` (a mapping keyed by term name,
``{penalty: {docs: relevant, lambda: 0.5}}``), a model family's ``model.<arch>`` and a
metric family's ``evaluate.<metric>``. Loading refuses unknown keys (with the closest known
one), missing required keys and ill-typed or out-of-range values with one error naming the
key (e.g. ``methods.penalty_irrelevant.loss.penalty.lambda``) and the fix, so a typo in
``dvc exp run -S …`` fails at once instead of silently running the default. Defaults live
in the configs only; params.yaml repeats them (a test checks that they agree). This module
imports no plug-in package (the records are found by name) and no torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline import plugins
from pipeline.config import ParamsError, build, coerce, did_you_mean, fields, hints, key_of
from pipeline.schemas import Direction, PsiColumn
from pipeline.sections import (
    CandidatesParams,
    ControlParams,
    EvaluateParams,
    ModelParams,
    ReportParams,
    RerankParams,
    ScoreParams,
    TrainConfig,
    TransferParams,
)

DEFAULT_PARAMS = "params.yaml"
TrainParams = TrainConfig  # the `train` section is the trainer's config

__all__ = [
    "DEFAULT_PARAMS",
    "FIRST_STAGE",
    "REFERENCE_ROWS",
    "ZERO_SHOT",
    "CandidatesParams",
    "ControlParams",
    "DatasetParams",
    "EvaluateParams",
    "MethodParams",
    "ModelParams",
    "Objective",
    "Params",
    "ParamsError",
    "PostParams",
    "ReportParams",
    "RerankParams",
    "ScoreParams",
    "TrainParams",
    "TransferParams",
    "get_method",
    "get_post_entry",
    "load_params",
    "parse_params",
]

Objective = tuple[tuple[str, Any], ...]
"""A method's training loss: ``(loss term name, its config)`` per term, summed."""


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
        return self.config_of(self.name)

    def config_of(self, name: str) -> Any:
        """The config of source ``name`` (its section ``dataset.<name with _>``)."""
        return self.sources[plugins.record("source", name).section]

    @property
    def folds(self) -> int:
        """Cross-validation folds of the selected source (1 = one train/test split)."""
        return int(getattr(self.source, "folds", 1))


@dataclass(frozen=True)
class MethodParams:
    """One entry under ``methods:``: how its training data is ordered and its loss terms.

    ``loss``: the names of its loss terms (``pipeline.train.losses``), in params order;
    ``terms``: each term with its own config, loaded from its entry of the mapping
    ``loss: {penalty: {docs: relevant, lambda: 1.0}}`` (``margin: {}`` is a term with its
    defaults), summed with their weights. ``psi``: the Ψ column its loss reads (required:
    ``order@<method>`` records it). ``ordering_keys``: the per-method settings its ordering
    declares in its record's ``method_keys`` (the curriculum's ``direction``), those set;
    ``direction`` reads one. ``ordering_params``: overrides of the ordering's
    own section (``orderings.<o>``) for this method only, e.g. ``{by_query: false}``: a
    control differs from its method by one key.
    """

    ordering: str
    loss: tuple[str, ...]
    psi: PsiColumn
    terms: Objective = ()
    ordering_keys: Mapping[str, Any] = field(default_factory=dict)
    ordering_params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def direction(self) -> Direction | None:
        """The curriculum's per-method ``direction`` (``None``: not set)."""
        value: Direction | None = self.ordering_keys.get("direction")
        return value

    def config(self, loss: str) -> Any:
        """The config of loss term ``loss``."""
        return dict(self.terms)[loss]

    def settings(self) -> dict[str, Any]:
        """The entry as params.yaml spells it (set values only): for provenance records."""
        loss: dict[str, Any] = {}
        for name, cfg in self.terms:
            loss[name] = {key_of(k): v for k, v in dataclasses.asdict(cfg).items()
                          if v is not None}  # fmt: skip
        out: dict[str, Any] = {"ordering": self.ordering, "loss": loss, "psi": self.psi}
        out.update(self.ordering_keys)
        if self.ordering_params:
            out["ordering_params"] = dict(self.ordering_params)
        return out


@dataclass(frozen=True)
class PostParams:
    """One entry under ``post:``: an inference-time method (SPEC §6.8). ``processor``: the
    post-processor (``pipeline.post``); ``base``: the method (or ``zero-shot``) whose runs it
    re-ranks, every seed's; ``config``: the processor's settings, loaded into its record's
    ``Config`` from the entry's other keys (``post.<entry>.lambda``)."""

    processor: str
    base: str
    config: Any

    def settings(self) -> dict[str, Any]:
        """The entry as params.yaml spells it: for provenance records and the report."""
        values = {key_of(k): v for k, v in dataclasses.asdict(self.config).items()}
        return {"processor": self.processor, "base": self.base, **values}


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
    # `controls.<control>` → the methods it controls (compared directly: treatment − control)
    controls: dict[str, ControlParams] = field(default_factory=dict)
    # `post.<entry>` → an inference-time method re-ranking a base method's runs
    post: dict[str, PostParams] = field(default_factory=dict)

    def ordering_config(self, method: str) -> Any:
        """The ordering Config that ``method`` trains with: ``orderings.<o>`` with the
        method's ``ordering_params`` applied."""
        m = self.methods[method]
        return dataclasses.replace(self.orderings[m.ordering], **m.ordering_params)

    def seed_runs_of(self, method: str) -> list[tuple[int, str]]:
        """``(seed, seed folder)`` of each run of ``method``: a trained method's
        ``train.seed_runs()``; one run seeded by ``train.seed`` for an untrained row
        (``zero-shot``), which the train stage's seeds do not multiply; a ``post:`` entry's
        are its base's."""
        if method in self.post:
            return self.seed_runs_of(self.post[method].base)
        return self.train.seed_runs() if method in self.methods else [(self.train.seed, "")]


# Reserved: the report's reference row evaluates the BM25 candidates under this name.
FIRST_STAGE = "bm25"
# Reserved: the untrained checkpoint of `model.arch`, evaluated like a method (SPEC §5.1).
ZERO_SHOT = "zero-shot"
REFERENCE_ROWS = (FIRST_STAGE, ZERO_SHOT)
SECTIONS: dict[str, type] = {
    "score": ScoreParams,
    "candidates": CandidatesParams,
    "train": TrainConfig,
    "rerank": RerankParams,
    "report": ReportParams,
    "transfer": TransferParams,
}
"""The sections with one fixed config (``dataset``, ``model``, ``evaluate``, ``orderings``
and ``methods`` hold plug-ins' configs)."""
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
    built["dataset"] = _dataset(raw.get("dataset"), built["transfer"])
    built["model"] = _plugin_section(ModelParams, raw.get("model"), "model", "model family",
                                     "arch", "families")  # fmt: skip
    built["evaluate"] = _plugin_section(EvaluateParams, raw.get("evaluate"), "evaluate",
                                        "metric", None, "metrics")  # fmt: skip
    built["orderings"] = _orderings(raw.get("orderings"))
    methods_raw = raw.get("methods")
    if not isinstance(methods_raw, Mapping) or not methods_raw:
        raise ParamsError("params key 'methods' must map at least one method name to its settings")
    built["methods"] = {
        str(m): _method(str(m), v, built["orderings"]) for m, v in methods_raw.items()
    }
    built["controls"] = _controls(raw.get("controls"), list(built["methods"]))
    built["post"] = _post(raw.get("post"), list(built["methods"]))
    params = Params(**built)
    _check_methods(params)
    return params


def _mapping(raw: Any, key: str) -> Mapping[str, Any]:
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise ParamsError(f"params key {key!r}: expected a mapping, got {raw!r}")
    return raw


def _dataset(raw: Any, transfer: TransferParams) -> DatasetParams:
    """``dataset`` → its ``name`` and every source's subsection loaded into its Config; the
    ``name`` must be a source with training data, ``transfer.name`` any source."""
    raw = _mapping(raw, "dataset")
    sources = plugins.records("source")
    sections = {r.section: r for r in sources.values()}
    allowed = ["name", *sections]
    for key in raw:
        if key not in allowed:
            owners = sorted(s for s, r in sections.items() if key in fields(r.config))
            where = f"; it is a key of a source's own section: {owners}" if owners else ""
            raise ParamsError(
                f"params key 'dataset.{key}' is unknown; known keys of 'dataset': {allowed}"
                + (where or did_you_mean(key, allowed))
            )
    name = str(raw.get("name", DatasetParams.name))
    for key, value, trains in (("dataset.name", name, True), ("transfer.name", transfer.name,
                                                              False)):  # fmt: skip
        try:
            source = plugins.record("source", value)
        except ValueError as e:
            raise ParamsError(f"params key {key!r}: {e}") from e
        if trains and not source.trains:
            usable = sorted(n for n, r in sources.items() if r.trains)
            raise ParamsError(
                f"params key {key!r}: source {value!r} has no training data (an evaluation "
                f"collection: use it as transfer.name); sources to train on: {usable}"
            )
    configs: dict[str, Any] = {
        s: build(r.config, raw.get(s), f"dataset.{s}") for s, r in sections.items()
    }
    return DatasetParams(name, configs)


def _plugin_section(
    cls: type, raw: Any, key: str, kind: str, chosen: str | None, into: str
) -> Any:
    """A section of shared keys (``cls``'s fields) and one subsection per plug-in of
    ``kind``, each loaded into its record's config (``model.<arch>``, ``evaluate.<metric>``);
    ``chosen``: the shared key that names the plug-in in use (``arch``), checked."""
    raw = _mapping(raw, key)
    records = plugins.records(kind)
    shared = [f.name for f in dataclasses.fields(cls) if f.name != into]
    for k in raw:
        if k not in shared and k not in records:
            owners = sorted(n for n, r in records.items() if k in fields(r.config))
            where = f"; it is a setting of {owners}: put it under `{key}.<name>`" if owners else ""
            raise ParamsError(
                f"params key '{key}.{k}' is unknown; keys of {key!r}: {shared}, and a section "
                f"per {kind} {sorted(records)}" + (where or did_you_mean(k, [*shared, *records]))
            )
    types = hints(cls)
    values = {k: coerce(raw[k], types[k], f"{key}.{k}") for k in shared if k in raw}
    if chosen is not None:
        name = values.get(chosen, getattr(cls, chosen))
        try:
            plugins.record(kind, name)
        except ValueError as e:
            raise ParamsError(f"params key '{key}.{chosen}': {e}") from e
    own = {n: build(r.config, raw.get(n), f"{key}.{n}") for n, r in records.items()}
    return cls(**values, **{into: own})


def _orderings(raw: Any) -> dict[str, Any]:
    """`orderings:` → ``{name: Config}``, each section loaded into its record's Config."""
    if raw is None:
        return {}
    out: dict[str, Any] = {}
    for name, section in _mapping(raw, "orderings").items():
        try:
            record = plugins.record("ordering", str(name))
        except ValueError as e:
            raise ParamsError(f"params key 'orderings.{name}': {e}") from e
        out[str(name)] = build(record.config, section, f"orderings.{name}")
    return out


def _controls(raw: Any, methods: list[str]) -> dict[str, ControlParams]:
    """`controls:` → ``{control: ControlParams}``; every name is a method under `methods:`
    and no method is its own control."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ParamsError(f"params key 'controls': expected a mapping, got {raw!r}")
    out = {}
    for name, section in raw.items():
        key = f"controls.{name}"
        cfg = build(ControlParams, section, key)
        for m in (str(name), *cfg.of):
            if m not in methods:
                raise ParamsError(
                    f"params key {key!r}: {m!r} is not a method under `methods:`; known: "
                    f"{methods}{did_you_mean(m, methods)}"
                )
        if not cfg.of or str(name) in cfg.of or len(set(cfg.of)) != len(cfg.of):
            raise ParamsError(
                f"params key '{key}.of': expected the distinct methods that {name!r} is a "
                f"control of (not itself), got {cfg.of!r}"
            )
        out[str(name)] = cfg
    return out


POST_KEYS = ("processor", "base")
"""Keys every ``post:`` entry has besides its processor's settings."""


def _post(raw: Any, methods: list[str]) -> dict[str, PostParams]:
    """``post:`` → ``{entry: PostParams}``: each entry names a known processor and a base
    that is a method or ``zero-shot``, and no name is a method's or a reference row's."""
    out: dict[str, PostParams] = {}
    bases = [*methods, ZERO_SHOT]
    for name, section in _mapping(raw, "post").items():
        key = f"post.{name}"
        entry = dict(_mapping(section, key))
        if str(name) in (*methods, *REFERENCE_ROWS):
            raise ParamsError(f"params key {key!r}: the name is a method's or a reference row's; "
                              "rename the entry")  # fmt: skip
        for k in POST_KEYS:
            if not isinstance(entry.get(k), str):
                raise ParamsError(
                    f"params key '{key}.{k}' is required (a name) but missing; e.g. "
                    f"`processor: score_shift`, `base: {methods[0]}`"
                )
        processor, base = str(entry.pop("processor")), str(entry.pop("base"))
        try:
            record = plugins.record("post", processor)
        except ValueError as e:
            raise ParamsError(f"params key '{key}.processor': {e}") from e
        if base not in bases:
            raise ParamsError(
                f"params key '{key}.base': {base!r} is not a method under `methods:` nor "
                f"{ZERO_SHOT!r}{did_you_mean(base, bases)}"
            )
        cfg = build(record.config, entry, key, owner=f"post-processor {processor!r}")
        out[str(name)] = PostParams(processor, base, cfg)
    return out


def _method(name: str, raw: Any, orderings: Mapping[str, Any]) -> MethodParams:
    """One ``methods:`` entry: its ordering, its loss terms each with its own config, its Ψ
    column and per-method ordering settings."""
    key = f"methods.{name}"
    raw = dict(_mapping(raw, key))
    overrides = raw.pop(ORDERING_PARAMS, None) or {}
    for k in METHOD_KEYS:
        if k not in raw:
            raise ParamsError(f"params key '{key}.{k}' is required but missing")
    order_keys = sorted({k for r in plugins.records("ordering").values() for k in r.method_keys})
    allowed = [*METHOD_KEYS, *order_keys, ORDERING_PARAMS]
    for k in raw:
        if k not in allowed:
            raise ParamsError(_not_taken(key, str(k), allowed))
    terms = _terms(raw["loss"], f"{key}.loss")
    plain = build(_Entry, {k: raw[k] for k in ("ordering", "psi")}, key)
    own = _ordering_keys(plain.ordering, {k: v for k, v in raw.items() if k in order_keys}, key)
    chosen = _ordering_params(plain.ordering, overrides, orderings, f"{key}.{ORDERING_PARAMS}")
    names = tuple(n for n, _ in terms)
    return MethodParams(plain.ordering, names, plain.psi, terms, own, chosen)


def _ordering_keys(ordering: str, values: dict[str, Any], key: str) -> dict[str, Any]:
    """A method's per-method ordering keys (``methods.<m>.direction``), typed by its
    ordering record's ``method_config`` where it has one; only the keys set are kept. A key
    its ordering does not declare is refused later (:func:`_check_ordering`)."""
    try:
        record = plugins.record("ordering", ordering)
    except ValueError:
        return values  # the unknown ordering is reported by _check_ordering
    typed = {k: v for k, v in values.items() if k in record.method_keys}
    if record.method_config is None or not typed:
        return values
    cfg = build(record.method_config, typed, key)
    return {**values, **{k: getattr(cfg, fields(record.method_config)[k].name) for k in typed}}


def _terms(value: Any, key: str) -> Objective:
    """``loss``: a non-empty mapping of term name → its settings (``{}`` or empty: its
    defaults), each loaded into its record's config at ``<key>.<term>``
    (``methods.m.loss.penalty.lambda``, one key DVC shows and ``-S`` sets). The terms are
    applied in the mapping's (params.yaml's) order."""
    if isinstance(value, list):  # the list form of earlier versions: show the mapping
        items = [dict(t) if isinstance(t, Mapping) else {"name": t} for t in value]
        spelled = {str(t.pop("name", "?")): t for t in items}
        raise ParamsError(
            f"params key {key!r}: loss terms are a mapping keyed by term name, not a list; "
            f"write `loss: {_flow(spelled)}`"
        )
    if not isinstance(value, Mapping) or not value:
        raise ParamsError(
            f"params key {key!r}: expected a mapping of loss terms, term name → its settings "
            f"(e.g. `{{margin: {{}}}}` or `{{penalty: {{docs: relevant, lambda: 1.0}}}}`), "
            f"got {value!r}"
        )
    terms = []
    for term, settings in value.items():
        where = f"{key}.{term}"
        try:
            record = plugins.record("loss", str(term))
        except ValueError as e:
            raise ParamsError(f"params key {where!r}: {e}") from e
        if settings is not None and not isinstance(settings, Mapping):
            raise ParamsError(
                f"params key {where!r}: expected the term's settings as a mapping (`{{}}` for "
                f"its defaults), got {settings!r}"
            )
        terms.append((str(term), build(record.config, settings or {}, where,
                                       owner=f"loss {term!r}")))  # fmt: skip
    return tuple(terms)


def _flow(d: Mapping[str, Any]) -> str:
    """A mapping in YAML flow style (``{penalty: {docs: relevant}}``), for error messages."""
    return yaml.safe_dump(dict(d), default_flow_style=True, sort_keys=False).strip()


def _ordering_params(
    ordering: str, overrides: Any, orderings: Mapping[str, Any], key: str
) -> dict[str, Any]:
    """A method's ``ordering_params``, validated by building its ordering's Config from
    ``orderings.<o>`` with them applied (unknown keys, types and ranges, as for the section)."""
    if not overrides:
        return {}
    overrides = _mapping(overrides, key)
    try:
        record = plugins.record("ordering", ordering)
    except ValueError as e:
        raise ParamsError(f"params key {key!r}: {e}") from e
    section = orderings.get(ordering)
    base = dataclasses.asdict(section) if section is not None else {}
    cfg: Any = build(record.config, {**{key_of(k): v for k, v in base.items()}, **overrides}, key)
    names = {str(k): fields(record.config)[str(k)].name for k in overrides}
    return {name: getattr(cfg, name) for name in names.values()}


@dataclass(frozen=True)
class _Entry:
    """The keys every method entry has besides its loss terms (validated here)."""

    ordering: str
    psi: PsiColumn


def _not_taken(key: str, k: str, allowed: list[str]) -> str:
    """The error of a method key that the entry does not take (a loss term's setting that
    was written beside the terms, as the flat form of earlier versions did)."""
    owners = sorted(n for n, r in plugins.records("loss").items() if k in fields(r.config))
    hint = (
        f"; {k!r} is a setting of the loss terms {owners}: put it in the term's entry, "
        f"`loss: {{{owners[0]}: {{{k}: <value>}}}}`"
        if owners
        else did_you_mean(k, allowed)
    )
    return f"params key '{key}.{k}' is unknown; keys of a method: {sorted(allowed)}{hint}"


def _check_methods(params: Params) -> None:
    for reserved in REFERENCE_ROWS:
        if reserved in params.methods:
            raise ParamsError(
                f"params key 'methods.{reserved}': the name is reserved for a reference row "
                "of the report; rename the method"
            )
    for name, m in params.methods.items():
        _check_ordering(params, name, m)
        for term, cfg in m.terms:
            check = getattr(cfg, "check_params", None)
            if check is not None:  # rules against other sections (a term's config says)
                check(params, f"methods.{name}.loss.{term}")


def _check_ordering(params: Params, name: str, m: MethodParams) -> None:
    """The method's ordering exists, has its `orderings.<o>` section (DVC's order stage
    depends on it) and takes every per-method ordering key the method sets."""
    key = f"methods.{name}.ordering"
    orderings = plugins.records("ordering")
    try:
        record = plugins.record("ordering", m.ordering)
    except ValueError as e:
        raise ParamsError(f"params key {key!r}: {e}") from e
    if m.ordering not in params.orderings:
        raise ParamsError(
            f"params key 'orderings.{m.ordering}' is missing: method {name!r} uses ordering "
            f"{m.ordering!r} and its order stage depends on that section; add "
            f"`{m.ordering}: {{}}` under `orderings:` (or its params)"
        )
    for k in sorted({k for r in orderings.values() for k in r.method_keys}):
        if k in m.ordering_keys and k not in record.method_keys:
            takers = sorted(o for o, r in orderings.items() if k in r.method_keys)
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




def get_post_entry(params: Params, name: str) -> PostParams:
    """The ``post:`` entry ``name``; an unknown name lists the known ones."""
    if name not in params.post:
        known = sorted(params.post)
        raise ParamsError(f"unknown post-processing entry {name!r}; known (under `post:` in "
                          f"params.yaml): {known}{did_you_mean(name, known)}")  # fmt: skip
    return params.post[name]
