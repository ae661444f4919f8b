"""Typed, validated view of params.yaml.

Every section is a frozen dataclass. Loading rejects unknown keys, ill-typed values and
out-of-range values with one error naming the key (e.g. `methods.penalty_irrelevant.lambda`)
and what was expected, so a typo in `dvc exp run -S …` fails at once instead of silently
running the default.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml

from pipeline.config import Range, did_you_mean
from pipeline.models.config import ModelConfig
from pipeline.ordering import ORDERINGS, get_ordering
from pipeline.schemas import PSI_SOURCE
from pipeline.train.losses import get_record

DEFAULT_PARAMS = "params.yaml"


class ParamsError(ValueError):
    """params.yaml is missing a key, has an unknown key, or a value of the wrong type/range."""


@dataclass(frozen=True)
class DatasetParams:
    name: str = "grep-biasir"
    test_fraction: float = 0.3  # with folds: 1 (a single split)
    folds: int = 5  # k-fold cross-validation over queries (Grep-BiasIR); 1 = one split
    split_seed: int = 13
    bm25_negatives: int = 2
    bm25_pool: int = 10
    max_queries: int | None = None
    # Paper scale (network needed): msmarco-passage
    n_triples: int = 100_000  # papers: 3_000_000
    triples_sample: str = "first"  # first | sample (seeded with split_seed)
    query_set: str = "215"  # 215 | 1765 (shipped MS MARCO dev query sets)
    first_stage: str = "auto"  # auto | shipped (BM25 top-200 run of the 215 set) | bm25
    candidates_k: int = 200
    batch_size: int = 100_000
    # Paper scale: trec-fair-2022
    fair_dimensions: list[str] = field(
        default_factory=lambda: ["gender_category", "page_subcont_regions"]
    )
    docs_per_query: int | None = 100
    negatives: int = 2


@dataclass(frozen=True)
class ScoreParams:
    tokenizer: str = "reference"
    wordlist_specific: str = "pipeline/resources/wordlists/wordlist_genderspecific.txt"
    wordlist_representative: str = "pipeline/resources/wordlists/wordlist_gender_representative.txt"
    liwc_dic: str | None = None
    neutrality_tau: float = 1.0
    complexity_parser: str | None = None  # installed spaCy pipeline: Lu (2010) syntactic indices


@dataclass(frozen=True)
class CandidatesParams:
    """``top_k``: BM25 candidates per test query (reranked); ``train_top_k``: per training
    query (read only by the ``lws`` ordering), ``None`` = ``top_k``, ``0`` = none (paper scale
    without LWS: 400k training queries × the whole corpus is hours of BM25)."""

    top_k: int = 50
    k1: float = 0.9
    b: float = 0.4
    train_top_k: Annotated[int, Range(ge=0)] | None = None
    fill_seed: int = 13  # test lists shorter than top_k: the random part of the fill


ModelParams = ModelConfig  # the `model` section is the model families' config


@dataclass(frozen=True)
class TrainParams:
    seed: int = 42
    batch_size: int = 16
    lr: float = 3e-5
    epochs: int = 1
    group_size: int = 2  # one positive + (group_size - 1) negatives of a query per group
    warmup_ratio: float = 0.1
    warmup_steps: int | None = None  # wins over warmup_ratio when set (papers: 160k / 1k)
    max_steps: int | None = None
    log_every: int = 5
    grad_clip: float = 1.0
    threads: int = 1
    workers: Annotated[int, Range(ge=1)] = 2  # fold models trained side by side (CPU)
    device: str = "auto"
    devices: int = 1  # > 1: DistributedDataParallel over that many processes
    checkpoint_every: int | None = None  # N: resumable checkpoint every N steps
    seeds: list[int] | None = None  # [s1, s2, ..]: train each method once per seed
    length_window: int | None = None  # N: length-bucketed batches within N-batch windows
    # Which seeds' models stay in models/<method>/ after the stage reranked with them:
    # "first" (train.seeds[0]'s; the others are reproduced by rerunning with keep_models: all)
    keep_models: Literal["first", "all"] = "first"

    def kept_runs(self) -> list[tuple[int, str]]:
        """The ``seed_runs()`` whose models are kept (``keep_models``)."""
        runs = self.seed_runs()
        return runs if self.keep_models == "all" else runs[:1]

    def seed_runs(self) -> list[tuple[int, str]]:
        """``(seed, subfolder)`` per trained model of a method: ``[(seed, "")]`` without
        ``seeds`` (models/<m>/, runs/<m>/, eval/<m>/), else one ``seed-<n>`` folder each."""
        if self.seeds is None:
            return [(self.seed, "")]
        return [(s, f"seed-{s}") for s in self.seeds]


@dataclass(frozen=True)
class TransferParams:
    """The held-out collection every trained model is also evaluated on, without training
    on it (issue 21): ``name`` (``genderbias-qa``, shipped) and its ``splits``."""

    name: Literal["genderbias-qa"] = "genderbias-qa"
    splits: list[Literal["test", "train"]] = field(default_factory=lambda: ["test"])
    fold_models: Literal["first", "all"] = "first"  # which fold models of a seed rerank it


@dataclass(frozen=True)
class RerankParams:
    batch_size: int = 64


@dataclass(frozen=True)
class EvaluateParams:
    cutoffs: list[int] = field(default_factory=lambda: [10, 20])
    awrf_target: str = "uniform"
    exposure_temperature: float = 1.0  # Plackett-Luce temperature on standardised scores


@dataclass(frozen=True)
class ReportParams:
    """The report's comparison with the baseline (SPEC §4.8): multiple-comparison correction
    and the paired bootstrap CI of each difference (pipeline/stats.py)."""

    correction: str = "bonferroni"  # bonferroni | holm
    bootstrap_samples: int = 10_000
    bootstrap_seed: int = 0


@dataclass(frozen=True)
class MethodParams:
    """One entry under `methods:`: how its training data is ordered and which loss it uses."""

    ordering: str
    loss: str
    psi: str  # required: order@<method> declares it as a DVC param dependency
    lambda_: float | None = None
    lambda_pos: float | None = None
    lambda_neg: float | None = None
    margin: float = 1.0
    alpha: float | None = None  # poe (EqualizeIR): weight of the weak learner's log-probs
    coef: float | None = None  # neutrality_kl: weight of KL(softmax ζ ‖ softmax s)
    adv_weight: float | None = None  # AdvBERT: weight of the adversary's cross-entropy
    weak_strategy: str | None = None  # poe: less_data | weaker_model | fewer_steps | biased_data
    weak_layers: int | None = None  # weaker_model: encoder layers of f_B (< the ranker's)
    # Per-method setting of orderings that list it in their record's `method_keys`
    # (curriculum); an error for any other ordering.
    direction: Literal["low_to_high", "high_to_low"] | None = None
    # Overrides of the ordering's own params (`orderings.<o>`) for this method only, e.g.
    # `{by_query: false}` or `{n_buckets: all}`: a control differs from its method by one key.
    ordering_params: dict[str, Any] = field(default_factory=dict)

    def loss_params(self) -> dict[str, float]:
        out = {"margin": self.margin}
        for k in ("lambda_", "lambda_pos", "lambda_neg", "alpha", "coef"):
            v = getattr(self, k)
            if v is not None:
                out[k.rstrip("_")] = v
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


PSI_COLUMNS = tuple(PSI_SOURCE)
# Reserved: the report's reference row evaluates the BM25 candidates under this name.
FIRST_STAGE = "bm25"
# Reserved: the untrained checkpoint of `model.arch`, evaluated like a method (SPEC §5.1).
ZERO_SHOT = "zero-shot"
REFERENCE_ROWS = (FIRST_STAGE, ZERO_SHOT)
DATASETS = ("grep-biasir", "msmarco-passage", "trec-fair-2022")

_RANGES: dict[str, tuple[float | None, float | None]] = {
    "dataset.test_fraction": (0.0, 1.0),
    "dataset.bm25_negatives": (0, None),
    "dataset.bm25_pool": (1, None),
    "dataset.max_queries": (2, None),
    "dataset.n_triples": (1, None),
    "dataset.candidates_k": (1, None),
    "dataset.batch_size": (1, None),
    "dataset.docs_per_query": (1, None),
    "dataset.negatives": (0, None),
    "score.neutrality_tau": (0, None),
    "candidates.top_k": (1, None),
    "candidates.k1": (0, None),
    "candidates.b": (0, 1),
    "model.n_layers": (1, None),
    "model.train_layers": (1, None),
    "model.temperature": (0, None),
    "model.dim": (1, None),
    "dataset.folds": (1, None),
    "train.group_size": (2, None),
    "model.max_len": (8, None),
    "model.q_len": (1, None),
    "train.batch_size": (1, None),
    "train.lr": (0, None),
    "train.epochs": (1, None),
    "train.warmup_ratio": (0, 1),
    "train.max_steps": (1, None),
    "train.warmup_steps": (0, None),
    "train.log_every": (1, None),
    "train.threads": (1, None),
    "train.devices": (1, None),
    "train.checkpoint_every": (1, None),
    "train.seeds": (0, None),
    "train.length_window": (1, None),
    "rerank.batch_size": (1, None),
    "report.bootstrap_samples": (100, None),
    "report.bootstrap_seed": (0, None),
    "evaluate.cutoffs": (1, None),
    "evaluate.exposure_temperature": (0, None),
}
# Strict lower bounds (the value must be above, not at, the bound).
_EXCLUSIVE = {"train.lr", "evaluate.exposure_temperature"}
# String keys with a fixed set of values.
_CHOICES: dict[str, tuple[str, ...]] = {
    "evaluate.awrf_target": ("relevant", "uniform"),
    "report.correction": ("bonferroni", "holm"),
}
WEAK_STRATEGIES = ("less_data", "weaker_model", "fewer_steps", "biased_data")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp)).replace("NoneType", "null")


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Check `value` against the annotation `tp`; ints are accepted where floats are."""
    origin = typing.get_origin(tp)
    if origin is Annotated:  # a Range next to the field (pipeline.config)
        base, *meta = typing.get_args(tp)
        out = _coerce(value, base, key)
        for bound in (m for m in meta if isinstance(m, Range)):
            if not all(bound.holds(v) for v in (out if isinstance(out, list) else [out])):
                raise ParamsError(
                    f"params key {key!r}: {value!r} is out of range {bound.describe()}"
                )
        return out
    if origin is Literal:
        choices = typing.get_args(tp)
        if value not in choices:
            raise ParamsError(
                f"params key {key!r}: unknown value {value!r}; known: {list(choices)}"
                + did_you_mean(value, choices)
            )
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        errors = []
        for tp_i in inner:
            try:
                return _coerce(value, tp_i, key)
            except ParamsError as e:
                errors.append(str(e).removeprefix(f"params key {key!r}: "))
        if len(errors) == 1:
            raise ParamsError(f"params key {key!r}: {errors[0]}")
        raise ParamsError(f"params key {key!r}: {value!r} fits none of: " + "; ".join(errors))
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise ParamsError(f"params key {key!r}: expected a list, got {value!r}")
        return [_coerce(v, item, f"{key}[{i}]") for i, v in enumerate(value)]
    ok = (
        (tp is float and isinstance(value, int | float) and not isinstance(value, bool))
        or (tp is int and isinstance(value, int) and not isinstance(value, bool))
        or (tp is str and isinstance(value, str))
        or (tp is bool and isinstance(value, bool))
    )
    if not ok:
        raise ParamsError(
            f"params key {key!r}: expected {_type_name(tp)}, got {value!r} "
            f"({type(value).__name__}); fix it in params.yaml or your `-S` override."
        )
    return float(value) if tp is float else value


def _check_range(key: str, value: Any) -> None:
    if key in _CHOICES and value not in _CHOICES[key]:
        raise ParamsError(
            f"params key {key!r}: unknown value {value!r}; known: {list(_CHOICES[key])}"
        )
    if key not in _RANGES or value is None:
        return
    lo, hi = _RANGES[key]
    values = value if isinstance(value, list) else [value]
    for v in values:
        below = lo is not None and (v <= lo if key in _EXCLUSIVE else v < lo)
        if below or (hi is not None and v > hi):
            left = "(" if key in _EXCLUSIVE else "["
            raise ParamsError(
                f"params key {key!r}: {v!r} is out of range "
                f"{left}{lo}, {hi if hi is not None else '∞'}]"
            )


def _build(cls: type, data: Any, prefix: str) -> Any:
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ParamsError(f"params key {prefix!r}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {f.name.rstrip("_"): f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ParamsError(
            f"params key {prefix}.{unknown[0]!r} is unknown; known keys of {prefix!r}: "
            f"{sorted(fields)}"
        )
    kwargs = {}
    for name, f in fields.items():
        key = f"{prefix}.{name}"
        if name not in data:
            no_default = f.default is dataclasses.MISSING
            if no_default and f.default_factory is dataclasses.MISSING:
                raise ParamsError(f"params key {key!r} is required but missing")
            continue
        value = _coerce(data[name], hints[f.name], key)
        _check_range(key, value)
        kwargs[f.name] = value
    return cls(**kwargs)


def parse_params(raw: Mapping[str, Any]) -> Params:
    """Validate a params mapping (as read from params.yaml) into `Params`."""
    sections = {f.name: f for f in dataclasses.fields(Params)}
    unknown = sorted(set(raw) - set(sections))
    if unknown:
        raise ParamsError(
            f"params key {unknown[0]!r} is unknown; known sections: {sorted(sections)}"
        )
    hints = typing.get_type_hints(Params)
    built: dict[str, Any] = {
        name: _build(hints[name], raw.get(name), name)
        for name in sections
        if name not in ("methods", "orderings")
    }
    built["orderings"] = _orderings(raw.get("orderings"))
    methods_raw = raw.get("methods")
    if not isinstance(methods_raw, Mapping) or not methods_raw:
        raise ParamsError("params key 'methods' must map at least one method name to its settings")
    built["methods"] = {
        str(m): _method(str(m), v, raw.get("orderings")) for m, v in methods_raw.items()
    }
    params = Params(**built)
    _check_names(params)
    return params


def _method(name: str, raw: Any, orderings: Any) -> MethodParams:
    """One `methods.<name>` entry; its `ordering_params` are validated by building the
    ordering's Config from `orderings.<o>` with them applied (unknown keys, types, ranges)."""
    if not isinstance(raw, Mapping) or "ordering_params" not in raw:
        return _build(MethodParams, raw, f"methods.{name}")
    overrides = raw["ordering_params"] or {}
    key = f"methods.{name}.ordering_params"
    if not isinstance(overrides, Mapping):
        raise ParamsError(f"params key {key!r}: expected a mapping, got {overrides!r}")
    m = _build(MethodParams, {k: v for k, v in raw.items() if k != "ordering_params"},
               f"methods.{name}")  # fmt: skip
    try:
        record = get_ordering(m.ordering)
    except ValueError as e:
        raise ParamsError(f"params key 'methods.{name}.ordering': {e}") from e
    section = (orderings or {}).get(m.ordering) if isinstance(orderings, Mapping) else None
    cfg = _build(record.config, {**(section or {}), **overrides}, key)
    return dataclasses.replace(m, ordering_params={k: getattr(cfg, k) for k in overrides})


def _check_names(params: Params) -> None:
    t = params.train
    if t.batch_size % t.devices:
        raise ParamsError(
            f"params key 'train.batch_size': {t.batch_size} is not a multiple of train.devices "
            f"({t.devices}); every process takes batch_size / devices triples of each batch"
        )
    if t.seeds is not None and (not t.seeds or len(set(t.seeds)) != len(t.seeds)):
        raise ParamsError(
            f"params key 'train.seeds': {t.seeds!r} must be a non-empty list of distinct seeds, "
            "or null (one model per method, seeded by train.seed)"
        )

    if params.dataset.name not in DATASETS:
        raise ParamsError(
            f"params key 'dataset.name': unknown dataset {params.dataset.name!r}; "
            f"known: {list(DATASETS)}"
        )
    for reserved in REFERENCE_ROWS:
        if reserved in params.methods:
            raise ParamsError(
                f"params key 'methods.{reserved}': the name is reserved for a reference row "
                "of the report; rename the method"
            )
    for name, m in params.methods.items():
        _check_ordering(params, name, m)
        try:
            get_record(m.loss)
        except ValueError as e:
            raise ParamsError(f"params key 'methods.{name}.loss': {e}") from e
        _check_choice(f"methods.{name}.psi", m.psi, PSI_COLUMNS)
        if m.weak_strategy is not None:
            _check_choice(f"methods.{name}.weak_strategy", m.weak_strategy, WEAK_STRATEGIES)
        _check_weak(name, m, params.model)
        if m.loss == "poe" and m.weak_strategy is None:
            raise ParamsError(
                f"params key 'methods.{name}.weak_strategy' is required by loss 'poe'; "
                f"choose one of {list(WEAK_STRATEGIES)}"
            )
    d = params.dataset
    _check_choice("dataset.triples_sample", d.triples_sample, ("first", "sample"))
    _check_choice("dataset.query_set", d.query_set, ("215", "1765"))
    _check_choice("dataset.first_stage", d.first_stage, ("auto", "shipped", "bm25"))


def _check_weak(name: str, m: MethodParams, model: ModelConfig) -> None:
    """EqualizeIR's ``weaker_model`` must be strictly smaller than the ranker (SPEC §6.3)."""
    if m.weak_strategy != "weaker_model":
        return
    layers = m.weak_layers
    if layers is None:
        raise ParamsError(
            f"params key 'methods.{name}.weak_layers' is required by weak_strategy "
            "'weaker_model': the weak learner's encoder layers, fewer than the ranker's"
        )
    ranker = model.n_layers if model.n_layers is not None else _checkpoint_layers(model.name)
    if ranker is not None and layers >= ranker:
        raise ParamsError(
            f"params keys 'methods.{name}.weak_layers' ({layers}) and 'model.n_layers' "
            f"({ranker}{'' if model.n_layers is not None else ', all of ' + model.name}): "
            "the weaker_model weak learner must have strictly fewer layers than the ranker"
        )
    if model.train_layers is not None and layers < model.train_layers:
        raise ParamsError(
            f"params keys 'methods.{name}.weak_layers' ({layers}) and 'model.train_layers' "
            f"({model.train_layers}): the weak learner needs at least the trained layers"
        )


def _checkpoint_layers(name: str) -> int | None:
    """Encoder layers of the shipped checkpoints (others are only known once loaded)."""
    return {"all-MiniLM-L6-v2": 6, "tiny-random-bert": 2}.get(name)


def _check_choice(key: str, value: str, known: tuple[str, ...]) -> None:
    if value not in known:
        raise ParamsError(f"params key {key!r}: unknown value {value!r}; known: {list(known)}")


def _orderings(raw: Any) -> dict[str, Any]:
    """`orderings:` → ``{name: Config}``, each section loaded into its record's Config."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ParamsError(f"params key 'orderings': expected a mapping, got {raw!r}")
    out = {}
    for name, section in raw.items():
        try:
            record = get_ordering(str(name))
        except ValueError as e:
            raise ParamsError(f"params key 'orderings.{name}': {e}") from e
        out[str(name)] = _build(record.config, section, f"orderings.{name}")
    return out


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
