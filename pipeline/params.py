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
from typing import Any

import yaml

from pipeline.schemas import PSI_SOURCE

DEFAULT_PARAMS = "params.yaml"


class ParamsError(ValueError):
    """params.yaml is missing a key, has an unknown key, or a value of the wrong type/range."""


@dataclass(frozen=True)
class DatasetParams:
    name: str = "grep-biasir"
    test_fraction: float = 0.3
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


@dataclass(frozen=True)
class CandidatesParams:
    top_k: int = 50
    k1: float = 0.9
    b: float = 0.4


@dataclass(frozen=True)
class ModelParams:
    name: str = "all-MiniLM-L6-v2"
    n_layers: int | None = None
    max_len: int = 128
    q_len: int = 32


@dataclass(frozen=True)
class TrainParams:
    seed: int = 42
    batch_size: int = 16
    lr: float = 3e-5
    epochs: int = 1
    warmup_ratio: float = 0.1
    warmup_steps: int | None = None  # wins over warmup_ratio when set (papers: 160k / 1k)
    max_steps: int | None = None
    log_every: int = 5
    grad_clip: float = 1.0
    threads: int = 2
    device: str = "auto"
    devices: int = 1  # > 1: DistributedDataParallel over that many processes
    checkpoint_every: int | None = None  # N: resumable checkpoint every N steps
    seeds: list[int] | None = None  # [s1, s2, ..]: train each method once per seed
    length_window: int | None = None  # N: length-bucketed batches within N-batch windows

    def seed_runs(self) -> list[tuple[int, str]]:
        """``(seed, subfolder)`` per trained model of a method: ``[(seed, "")]`` without
        ``seeds`` (models/<m>/, runs/<m>/, eval/<m>/), else one ``seed-<n>`` folder each."""
        if self.seeds is None:
            return [(self.seed, "")]
        return [(s, f"seed-{s}") for s in self.seeds]


@dataclass(frozen=True)
class RerankParams:
    batch_size: int = 64


@dataclass(frozen=True)
class CurriculumParams:
    """Bias-aware curriculum (SPEC §6.1), read by the orderings of `order_groups.curriculum`."""

    psi: str = "tf_abs"
    n_buckets: int | str = 10  # an integer, or "all" = one triple per bucket (no-bucket mode)
    mu: float | None = None  # None = min Ψ (low_to_high) / max Ψ (high_to_low)
    sigma: float = 1.0
    direction: str = "low_to_high"  # used by the generic `curriculum` ordering
    seed: int = 42

    def buckets(self) -> int | None:
        return None if self.n_buckets == "all" else int(self.n_buckets)


@dataclass(frozen=True)
class LwsParams:
    """Light-weight sampling (SPEC §6.4), read by the orderings of `order_groups.lws`."""

    rate: float = 0.6
    top: int = 5


@dataclass(frozen=True)
class OrderGroups:
    """Which order stage serves each method: DVC gives one `foreach` stage one set of params,
    so methods are listed by the params their ordering reads (checked against `ordering`)."""

    plain: list[str] = field(default_factory=list)
    curriculum: list[str] = field(default_factory=list)
    lws: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EvaluateParams:
    cutoffs: list[int] = field(default_factory=lambda: [10, 20])
    awrf_target: str = "uniform"


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
    curriculum: CurriculumParams
    lws: LwsParams
    order_groups: OrderGroups
    methods: dict[str, MethodParams]


PSI_COLUMNS = tuple(PSI_SOURCE)
# Reserved: the report's reference row evaluates the BM25 candidates under this name.
FIRST_STAGE = "bm25"
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
    "evaluate.cutoffs": (1, None),
    "curriculum.sigma": (0, None),
    "lws.rate": (0, 1),
    "lws.top": (1, None),
}
# Strict lower bounds (the value must be above, not at, the bound).
_EXCLUSIVE = {"curriculum.sigma", "train.lr"}
# String keys with a fixed set of values.
_CHOICES: dict[str, tuple[str, ...]] = {"evaluate.awrf_target": ("relevant", "uniform")}
WEAK_STRATEGIES = ("less_data", "weaker_model", "fewer_steps", "biased_data")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp)).replace("NoneType", "null")


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Check `value` against the annotation `tp`; ints are accepted where floats are."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        for i, tp_i in enumerate(inner):
            try:
                return _coerce(value, tp_i, key)
            except ParamsError:
                if i == len(inner) - 1:
                    raise
        raise AssertionError("unreachable")
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
    hints = typing.get_type_hints(cls)
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
        name: _build(hints[name], raw.get(name), name) for name in sections if name != "methods"
    }
    methods_raw = raw.get("methods")
    if not isinstance(methods_raw, Mapping) or not methods_raw:
        raise ParamsError("params key 'methods' must map at least one method name to its settings")
    built["methods"] = {
        str(m): _build(MethodParams, v, f"methods.{m}") for m, v in methods_raw.items()
    }
    params = Params(**built)
    _check_names(params)
    return params


def _check_names(params: Params) -> None:
    from pipeline.registry import check_known

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
    if FIRST_STAGE in params.methods:
        raise ParamsError(
            f"params key 'methods.{FIRST_STAGE}': the name is reserved for the first-stage "
            "reference row of the report; rename the method"
        )
    for name, m in params.methods.items():
        check_known("ordering", m.ordering, f"methods.{name}.ordering")
        check_known("loss", m.loss, f"methods.{name}.loss")
        _check_choice(f"methods.{name}.psi", m.psi, PSI_COLUMNS)
        if m.weak_strategy is not None:
            _check_choice(f"methods.{name}.weak_strategy", m.weak_strategy, WEAK_STRATEGIES)
        if m.loss == "poe" and m.weak_strategy is None:
            raise ParamsError(
                f"params key 'methods.{name}.weak_strategy' is required by loss 'poe'; "
                f"choose one of {list(WEAK_STRATEGIES)}"
            )
    d = params.dataset
    _check_choice("dataset.triples_sample", d.triples_sample, ("first", "sample"))
    _check_choice("dataset.query_set", d.query_set, ("215", "1765"))
    _check_choice("dataset.first_stage", d.first_stage, ("auto", "shipped", "bm25"))
    c = params.curriculum
    _check_choice("curriculum.psi", c.psi, PSI_COLUMNS)
    _check_choice("curriculum.direction", c.direction, ("low_to_high", "high_to_low"))
    if isinstance(c.n_buckets, str) and c.n_buckets != "all":
        raise ParamsError(
            f"params key 'curriculum.n_buckets': expected an integer ≥ 1 or 'all', "
            f"got {c.n_buckets!r}"
        )
    if isinstance(c.n_buckets, int) and c.n_buckets < 1:
        raise ParamsError(
            f"params key 'curriculum.n_buckets': {c.n_buckets} is out of range [1, ∞]"
        )
    _check_groups(params)


def _check_choice(key: str, value: str, known: tuple[str, ...]) -> None:
    if value not in known:
        raise ParamsError(f"params key {key!r}: unknown value {value!r}; known: {list(known)}")


def _check_groups(params: Params) -> None:
    from pipeline.ordering import ORDER_GROUPS

    listed: dict[str, str] = {}
    for group in ("plain", "curriculum", "lws"):
        for name in getattr(params.order_groups, group):
            if name not in params.methods:
                raise ParamsError(
                    f"params key 'order_groups.{group}' lists {name!r}, which is not under "
                    f"`methods:`; known methods: {sorted(params.methods)}"
                )
            if name in listed:
                raise ParamsError(
                    f"params key 'order_groups': {name!r} is listed in both "
                    f"{listed[name]!r} and {group!r}; list it once"
                )
            listed[name] = group
    for name, m in params.methods.items():
        want = ORDER_GROUPS[m.ordering]
        if listed.get(name) != want:
            raise ParamsError(
                f"params key 'order_groups.{want}' must list method {name!r} (its ordering "
                f"{m.ordering!r} is served by the {want!r} order stage); "
                + (f"it is listed under {listed[name]!r}" if name in listed else "it is missing")
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
