"""One conformance check per plug-in kind, in the spirit of scikit-learn's ``check_estimator``.

Every registered record of a kind (``pipeline.plugins.PACKAGES``: loss terms, orderings, data
sources, metrics, model families, post-processors) must pass its kind's check, and so must a
contributor's new plug-in (``python -m pipeline.conformance``; tests/unit/test_conformance.py
runs it over every registry and over docs/adding-a-method.md's templates):

- **pickles**: the record (and a default config) survives ``pickle``; a model family's ranker
  class is found by pickle in a fresh process, as DDP's ``torch.save`` of the model needs
  (pipeline/train/distributed.py);
- **settings round-trip**: its config, placed where params.yaml keeps it (``methods.<m>.loss.
  <term>``, ``orderings.<name>``, ``dataset.<section>``, ``evaluate.<name>``,
  ``model.<arch>``, ``post.<entry>``), loads back equal from the YAML text and after a
  ``dvc exp run -S <key>=<value>`` of every setting (DVC's own override code);
- **typos refused**: an unknown setting stops loading, naming the key, with a "did you
  mean" when the config has settings;
- **listed**: the pipeline finds its file (``pipeline.deps``: stage code deps and digests);
  a metric's values are in the report's tables (``pipeline.report.tables.DIRECTION``); a
  λ-weighted loss term's weight is one flat key per term that sweeps resolve
  (``methods.*.lambda``).

A failure raises :class:`ConformanceError` naming the record, the check and the fix.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import logging
import pickle
import sys
import tempfile
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from pipeline import plugins
from pipeline.config import ParamsError, Range, key_of, required
from pipeline.params import DEFAULT_PARAMS, Params, parse_params

log = logging.getLogger(__name__)
PROBE = "conformance_probe"
"""The method or post entry a check adds to params to place a record."""


class ConformanceError(AssertionError):
    """A record that fails its kind's conformance check."""


def _fail(kind: str, name: str, check: str, why: str) -> ConformanceError:
    return ConformanceError(f"{kind} {name!r} fails '{check}': {why}")


def sample(tp: Any) -> Any:
    """A valid value of annotation ``tp`` (for a required setting without an example)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        value = sample(args[0])
        for bound in (m for m in args[1:] if isinstance(m, Range)):
            if not bound.holds(value):
                value = type(value)(bound.ge if bound.ge is not None
                                    else (bound.gt or 0) + 1 if bound.gt is not None
                                    else bound.le)  # fmt: skip
        return value
    if origin is typing.Literal:
        return args[0]
    if origin in (typing.Union, types.UnionType):
        return sample(next(a for a in args if a is not type(None)))
    if origin in (list, tuple):
        return [sample(args[0])]
    return {float: 1.0, int: 2, str: "x", bool: True}.get(tp, {})


def settings_of(cfg: Any) -> dict[str, Any]:
    """A config as params.yaml spells it (``lambda_`` → ``lambda``; tuples as lists)."""

    def plain(v: Any) -> Any:
        if isinstance(v, tuple | list):
            return [plain(x) for x in v]
        return {str(k): plain(x) for k, x in v.items()} if isinstance(v, Mapping) else v

    return {key_of(f.name): plain(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}


@dataclasses.dataclass(frozen=True)
class Kind:
    """Where params keep a record of one kind: ``example(raw, name, record)`` its settings in
    the shipped params (or ``None``), ``place(raw, name, record, settings)`` puts them in
    ``raw`` and returns their params key, ``loaded(params, name, record)`` reads the config."""

    example: Callable[[dict[str, Any], str, Any], Mapping[str, Any] | None]
    place: Callable[[dict[str, Any], str, Any, dict[str, Any]], str]
    loaded: Callable[[Params, str, Any], Any]
    registry: str


def _loss_example(raw: dict[str, Any], name: str, _: Any) -> Mapping[str, Any] | None:
    terms = [m.get("loss") or {} for m in (raw.get("methods") or {}).values()]
    return next((t[name] or {} for t in terms if isinstance(t, Mapping) and name in t), None)


def _place_loss(raw: dict[str, Any], name: str, _: Any, settings: dict[str, Any]) -> str:
    raw["methods"][PROBE] = {"ordering": "shuffle", "psi": "bool_abs", "loss": {name: settings}}
    return f"methods.{PROBE}.loss.{name}"


def _place_ordering(raw: dict[str, Any], name: str, _: Any, settings: dict[str, Any]) -> str:
    raw.setdefault("orderings", {})[name] = settings
    raw["methods"][PROBE] = {"ordering": name, "psi": "bool_abs", "loss": {"margin": {}}}
    return f"orderings.{name}"


def _place_post(raw: dict[str, Any], name: str, _: Any, settings: dict[str, Any]) -> str:
    base = next(iter(raw["methods"]))
    raw.setdefault("post", {})[PROBE] = {"processor": name, "base": base, **settings}
    return f"post.{PROBE}"


def _post_example(raw: dict[str, Any], name: str, _: Any) -> Mapping[str, Any] | None:
    entries = (raw.get("post") or {}).values()
    entry = next((e for e in entries if e.get("processor") == name), None)
    return None if entry is None else {k: v for k, v in entry.items()
                                       if k not in ("processor", "base")}  # fmt: skip


def _section(key: str, attr: Callable[[Any, str], str]) -> tuple[Any, Any]:
    """``example`` and ``place`` of a kind kept as ``<key>.<section>``."""

    def example(raw: dict[str, Any], name: str, record: Any) -> Mapping[str, Any] | None:
        value = (raw.get(key) or {}).get(attr(record, name))
        return value if isinstance(value, Mapping) else None

    def place(raw: dict[str, Any], name: str, record: Any, settings: dict[str, Any]) -> str:
        raw.setdefault(key, {})[attr(record, name)] = settings
        return f"{key}.{attr(record, name)}"

    return example, place


def _own(_: Any, name: str) -> str:
    return name


KINDS: dict[str, Kind] = {
    "loss": Kind(_loss_example, _place_loss, lambda p, n, _: p.methods[PROBE].config(n),
                 "losses"),
    "ordering": Kind(_section("orderings", _own)[0], _place_ordering,
                     lambda p, n, _: p.orderings[n], "orderings"),
    "source": Kind(*_section("dataset", lambda r, _: r.section),
                   lambda p, n, r: p.dataset.sources[r.section], "sources"),
    "metric": Kind(*_section("evaluate", _own), lambda p, n, _: p.evaluate.metrics[n],
                   "metrics"),
    "model family": Kind(*_section("model", _own), lambda p, n, _: p.model.families[n],
                         "models"),
    "post": Kind(_post_example, _place_post, lambda p, n, _: p.post[PROBE].config, "posts"),
}  # fmt: skip
"""Every plug-in kind (the keys of ``pipeline.plugins.PACKAGES``) and where params keep it."""


def example_settings(kind: str, name: str, record: Any, raw: dict[str, Any]) -> dict[str, Any]:
    """Settings of the record: those of the shipped params where it is used, else a sample
    value of each required setting (the others at their defaults)."""
    given = KINDS[kind].example(raw, name, record)
    if given is not None:
        return copy.deepcopy(dict(given))
    config = _config(kind, record)
    hints = typing.get_type_hints(config, include_extras=True)
    names = {f.name: key_of(f.name) for f in dataclasses.fields(config)}
    return {names[f]: sample(hints[f]) for f in required(config)}


def _config(kind: str, record: Any) -> type:
    config: type = record.config
    return config


def _load(raw: dict[str, Any], kind: str, name: str, check: str) -> Params:
    try:
        return parse_params(yaml.safe_load(yaml.safe_dump(raw, sort_keys=False)))
    except ParamsError as e:
        raise _fail(kind, name, check, f"params with the record placed do not load: {e}") from e


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def check_settings(kind: str, name: str, record: Any, base: Mapping[str, Any]) -> None:
    """Its settings load from params.yaml text, round-trip through the config and a ``-S``
    of every setting (DVC's override code rewriting the file), and a typo is refused."""
    from dvc.utils.hydra import apply_overrides

    where = KINDS[kind]
    raw = copy.deepcopy(dict(base))
    key = where.place(raw, name, record, example_settings(kind, name, record, raw))
    cfg = where.loaded(_load(raw, kind, name, "params round-trip"), name, record)
    again = copy.deepcopy(dict(base))
    where.place(again, name, record, settings_of(cfg))
    if where.loaded(_load(again, kind, name, "params round-trip"), name, record) != cfg:
        raise _fail(kind, name, "params round-trip", f"{key}: its settings written back as "
                    "params.yaml spells them load into another config")  # fmt: skip
    overrides = [f"{key}.{k}={yaml.safe_dump(v, default_flow_style=True).split(chr(10))[0]}"
                 for k, v in settings_of(cfg).items() if _scalar(v)]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "params.yaml"
        path.write_text(yaml.safe_dump(again, sort_keys=False), encoding="utf-8")
        try:
            apply_overrides(str(path), overrides)
        except Exception as e:  # DVC's own error type
            raise _fail(kind, name, "-S", f"dvc exp run -S {overrides}: {e}") from e
        loaded = where.loaded(_load(yaml.safe_load(path.read_text(encoding="utf-8")), kind,
                                    name, "-S"), name, record)  # fmt: skip
    if loaded != cfg:
        raise _fail(kind, name, "-S", f"{overrides} loads into {loaded}, not {cfg}")
    _check_typo(kind, name, record, base, key)


def _check_typo(kind: str, name: str, record: Any, base: Mapping[str, Any], key: str) -> None:
    known = [key_of(f.name) for f in dataclasses.fields(_config(kind, record))]
    typo = f"{known[0]}x" if known else "unknown_setting"
    raw = copy.deepcopy(dict(base))
    settings = example_settings(kind, name, record, raw)
    KINDS[kind].place(raw, name, record, {**settings, typo: 1})
    try:
        parse_params(raw)
    except ParamsError as e:
        hint = f"did you mean {known[0]!r}" if known else ""
        if f"'{key}.{typo}'" not in str(e) or (known and hint not in str(e)):
            say = f" and say {hint}" if known else ""
            raise _fail(kind, name, "typo", f"'{key}.{typo}' is refused with {e!r}: the error "
                        f"must name the key{say}") from e  # fmt: skip
        return
    raise _fail(kind, name, "typo", f"params key '{key}.{typo}' is accepted (a typo must stop "
                "loading)")  # fmt: skip


def check_pickles(kind: str, name: str, record: Any) -> None:
    """The record and its default config pickle; a model family's ranker class is found by
    pickle in a fresh process (its module resolves the class name)."""
    try:
        pickle.loads(pickle.dumps(record))
        config = _config(kind, record)
        if not required(config):
            pickle.loads(pickle.dumps(config()))
    except Exception as e:
        raise _fail(kind, name, "pickles", f"{e} (define its functions and classes at module "
                    "level)") from e  # fmt: skip
    if kind == "model family":
        cls = record.cls
        module = sys.modules[cls.__module__]
        try:
            data = pickle.dumps(cls)
            vars(module).pop(cls.__name__, None)  # as in a fresh process: found via the module
            if pickle.loads(data) is not cls:
                raise _fail(kind, name, "pickles", f"{cls.__qualname__} unpickles to another "
                            "class")  # fmt: skip
        except (AttributeError, pickle.PicklingError) as e:
            raise _fail(kind, name, "pickles", f"{e}: DDP's torch.save of the model cannot "
                        "be loaded by its ranks (make the class importable: "
                        "pipeline.models.family)") from e  # fmt: skip


def check_model(name: str, model: Any) -> None:
    """``model`` (a built ranker of family ``name``) survives ``torch.save`` and
    ``torch.load`` as the DDP launcher saves it (pipeline/train/distributed.py)."""
    import io

    import torch

    buffer = io.BytesIO()
    try:
        torch.save(model, buffer)
        buffer.seek(0)
        back = torch.load(buffer, weights_only=False)
    except Exception as e:
        raise _fail("model family", name, "pickles", f"torch.save of the model: {e}") from e
    if type(back) is not type(model):
        raise _fail("model family", name, "pickles", "torch.load gives another class")


def check_listed(kind: str, name: str, record: Any, base: Mapping[str, Any]) -> None:
    """The pipeline lists it: its file is a code dep of the stages that run it
    (``pipeline.deps``); a metric's values are report columns; a weighted loss term's
    weight is a per-term key that a ``methods.*.<key>`` sweep resolves."""
    from pipeline.deps.records import record_modules

    module = record_modules(KINDS[kind].registry).get(name)
    if module is None or not _file(module):
        raise _fail(kind, name, "listed", f"pipeline.deps finds no file of it ({module})")
    if kind == "metric":
        from pipeline.report.tables import DIRECTION

        missing = [m.base for m in record.measures if m.base not in DIRECTION]
        if missing:
            raise _fail(kind, name, "listed", f"measures {missing} are not report columns")
    if kind == "loss":
        _check_weighted(name, record, base)


def _file(module: str) -> bool:
    import importlib.util

    spec = importlib.util.find_spec(module)
    return spec is not None and spec.origin is not None and Path(spec.origin).is_file()


def _check_weighted(name: str, record: Any, base: Mapping[str, Any]) -> None:
    from pipeline.report.sweeps import Experiment, flatten, row_keys

    keys = [key_of(f.name) for f in dataclasses.fields(_config("loss", record))]
    weights = [k for k in {record.weight, "lambda"} if k in keys]
    raw = copy.deepcopy(dict(base))
    settings = example_settings("loss", name, record, raw)
    for weight in weights:
        exps = []
        for value in (0.5, 2.0):
            where = _place_loss(raw, name, record, {**settings, weight: value})
            exps.append(Experiment(str(value), str(value), flatten(raw), {PROBE: {"m": value}}))
        if row_keys(exps, f"methods.*.{weight}").get(PROBE) != f"{where}.{weight}":
            raise _fail("loss", name, "weighted", f"a sweep of methods.*.{weight} does not find "
                        f"{where}.{weight}")  # fmt: skip


def check_record(kind: str, name: str, base: Mapping[str, Any]) -> None:
    """Every check of kind ``kind`` on its record ``name``; ``base``: params.yaml's mapping
    (the settings where it is used there, and the rest of a valid params file)."""
    record = plugins.record(kind, name)
    check_pickles(kind, name, record)
    check_settings(kind, name, record, base)
    check_listed(kind, name, record, base)


def every_record() -> list[tuple[str, str]]:
    """``(kind, name)`` of every registered record of every kind."""
    return [(kind, name) for kind in plugins.PACKAGES for name in sorted(plugins.records(kind))]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--params", default=DEFAULT_PARAMS,
                    help="a valid params.yaml to place the records in")  # fmt: skip
    ap.add_argument("--kind", choices=sorted(KINDS), help="check only this kind")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    base = yaml.safe_load(Path(args.params).read_text(encoding="utf-8"))
    failed = 0
    for kind, name in every_record():
        if args.kind not in (None, kind):
            continue
        try:
            check_record(kind, name, base)
            log.info("%s %s: conforms", kind, name)
        except ConformanceError as e:
            failed += 1
            log.error("%s", e)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
