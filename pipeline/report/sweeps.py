"""Parameter sweeps from `dvc exp show --json`: λ / σ / bucket-count plots.

```bash
dvc exp run -S 'methods.penalty_irrelevant.loss.penalty.lambda=0.1,0.5,1,2,5' --queue
dvc queue start
dvc exp show --json > exps.json
python -m stages.sweeps exps.json --out-dir plots/sweeps     # the CLI (not a DVC stage)
```

`dvc exp show --json` prints a list of commits (`rev`, `name`, `data`, `error`,
`experiments`); `data` holds `params` (`{"params.yaml": {"data": {...}}}`) and `metrics`
(`{"metrics/<method>.json": {"data": {...}}}`); `experiments` is a list of ranges, each with
`revs` (experiments shaped like a commit) and an `executor` (`state`: queued, running,
success, failed, or null for a finished one). Queued, running and failed experiments (and
any with an `error`) are skipped: a failed experiment still shows the metrics of its base
commit. The workspace row is skipped unless asked for.

A parameter named `post.*.<key>` is per inference-time entry (`post.<entry>.<key>`, e.g.
`post.*.lambda`: each entry's λ; the methods are drawn as flat reference lines). A parameter
named `methods.*.<key>` is per method: a method's point uses its own
`methods.<method>.<key>`, or the setting `<key>` of its loss term that has one
(`methods.<method>.loss.<term>.<key>`: `methods.*.lambda` is each method's λ); of a method
with several terms that have the key, the term swept (whose value differs among the
experiments) — name it to be explicit: `methods.*.loss.penalty.lambda`. Methods without
that key (or whose swept term is ambiguous, logged) are left out. Any other parameter is
shared: every method gets a point.
Experiments with the same parameter value are averaged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from pipeline import io
from pipeline.errors import InputError
from pipeline.report.plots import save_png, sweep_figure
from pipeline.report.tables import EFFECTIVE, PLOTTED

log = logging.getLogger(__name__)

DEFAULT_PARAMS = (
    "methods.*.lambda",
    "post.*.lambda",
    "orderings.curriculum.sigma",
    "orderings.curriculum.n_buckets",
)
DEFAULT_METRICS = (EFFECTIVE.column(10), PLOTTED[0].column(10))
"""The effectiveness and first fairness axes of the trade-off plots (the metric records')."""
SKIP_STATES = frozenset({"queued", "running", "failed"})


@dataclass(frozen=True)
class Experiment:
    """One finished experiment (or commit): flat params and `method → metric → value`."""

    rev: str
    name: str
    params: dict[str, Any]
    metrics: dict[str, dict[str, float]]


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"a": {"b": 1}}` → `{"a.b": 1}`, as `dvc exp run -S` addresses it
    (`methods.m.loss.penalty.lambda`); a list holding mappings (a method's loss terms in
    records of earlier versions) is flattened by index; other lists and scalars are leaves."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, path + "."))
        elif isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
            out.update(flatten({str(i): v for i, v in enumerate(value)}, path + "."))
        else:
            out[path] = value
    return out


def _files(section: Mapping[str, Any] | None) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for path, result in (section or {}).items():
        data = result.get("data") if isinstance(result, Mapping) else None
        if isinstance(data, Mapping) and not result.get("error"):
            yield path, data


def _experiment(state: Mapping[str, Any]) -> Experiment | None:
    data = state.get("data")
    if state.get("error") or not isinstance(data, Mapping):
        return None
    params: dict[str, Any] = {}
    for _, values in _files(data.get("params")):
        params.update(flatten(values))
    metrics = {
        Path(path).stem: {k: float(v) for k, v in values.items() if _number(v)}
        for path, values in _files(data.get("metrics"))
    }
    if not metrics:
        return None
    return Experiment(
        str(state.get("rev")), str(state.get("name") or state.get("rev")), params, metrics
    )


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def experiments(doc: Sequence[Mapping[str, Any]], workspace: bool = False) -> list[Experiment]:
    """The finished experiments and commits of a `dvc exp show --json` document, deduplicated
    by rev (skipped: queued/running/failed ones, errors, the workspace unless `workspace`)."""
    if not isinstance(doc, Sequence) or isinstance(doc, str | bytes):
        raise InputError("expected the JSON list that `dvc exp show --json` prints")
    states: list[Mapping[str, Any]] = []
    for commit in doc:
        if commit.get("rev") != "workspace" or workspace:
            states.append(commit)
        for rng in commit.get("experiments") or []:
            state = (rng.get("executor") or {}).get("state")
            if state in SKIP_STATES:
                log.info("skipping %s experiment %s", state, rng.get("name"))
                continue
            states.extend(rng.get("revs") or [])
    out: dict[str, Experiment] = {}
    for s in states:
        exp = _experiment(s)
        if exp is not None:
            out.setdefault(exp.rev, exp)
    return list(out.values())


PER_ROW = ("methods.*.", "post.*.")
"""Per-row parameters: a trained method's (`methods.<m>.…`) or an inference-time entry's
(`post.<entry>.…`, e.g. its λ)."""


def row_keys(exps: Sequence[Experiment], param: str) -> dict[str, str]:
    """For a per-method ``methods.*.<key>``: each method's flat params key that holds its
    value: its own ``methods.<m>.<key>``, else its loss term's ``methods.<m>.loss.<term>.<key>``;
    where several terms have ``<key>``, the one whose value differs among ``exps`` (the swept
    term). A method with no such key, or several swept terms, is left out (logged)."""
    if not param.startswith("methods.*."):
        return {}
    key = param.removeprefix("methods.*.")
    out: dict[str, str] = {}
    for method in dict.fromkeys(m for e in exps for m in e.metrics):
        own, terms = f"methods.{method}.{key}", f"methods.{method}.loss."
        if any(own in e.params for e in exps):
            out[method] = own
            continue
        found = sorted({k for e in exps for k in e.params
                        if k.startswith(terms) and k.endswith(f".{key}")})  # fmt: skip
        swept = [k for k in found if len({repr(e.params.get(k)) for e in exps}) > 1]
        chosen = found if len(found) == 1 else swept
        if len(chosen) == 1:
            out[method] = chosen[0]
        elif found:
            log.warning("%s: method %s has %d terms with %r (%s); name one: "
                        "methods.*.loss.<term>.%s", param, method, len(found), key,
                        ", ".join(found), key)  # fmt: skip
    return out


def _x_of(exp: Experiment, param: str, method: str, keys: Mapping[str, str]) -> Any:
    """``exp``'s value of ``param`` for row ``method`` (``keys``: :func:`row_keys`)."""
    if param.startswith("post.*."):
        return exp.params.get(f"post.{method}.{param.removeprefix('post.*.')}")
    if param.startswith("methods.*."):
        return exp.params.get(keys[method]) if method in keys else None
    return exp.params.get(param)


def _swept(key: str, param: str) -> bool:
    """Whether flat params key ``key`` is (a row's value of) the swept ``param``."""
    for prefix in PER_ROW:
        if param.startswith(prefix):
            return key.startswith(prefix[:-2]) and key.endswith("." + param.removeprefix(prefix))
    return key == param


def _profile(exp: Experiment, param: str) -> tuple[tuple[str, str], ...]:
    """Every param of ``exp`` except the swept ones: experiments of one sweep share it."""
    return tuple(sorted((k, repr(v)) for k, v in exp.params.items() if not _swept(k, param)))


def one_profile(exps: Sequence[Experiment], param: str) -> list[Experiment]:
    """The experiments of one sweep of ``param``: those whose other params are all equal (a
    profile). Where several profiles are present (e.g. a quick run on 40 queries beside the
    default's λ experiments), the one with the most values of ``param`` (then the most
    experiments, then the first listed) is kept and the others are left out, named in the
    log: a sweep never averages experiments of different profiles, its reference lines
    included."""
    groups: dict[tuple[tuple[str, str], ...], list[Experiment]] = {}
    for exp in exps:
        groups.setdefault(_profile(exp, param), []).append(exp)
    if len(groups) <= 1:
        return list(exps)

    def size(group: list[Experiment]) -> tuple[int, int]:
        values = {tuple(sorted((k, repr(v)) for k, v in e.params.items() if _swept(k, param)))
                  for e in group}  # fmt: skip
        return len(values), len(group)

    kept = max(groups.values(), key=size)  # max keeps the first of equals: document order
    left = [e.name for e in exps if e not in kept]
    mine = set(_profile(kept[0], param))
    diff = sorted({k for e in exps if e not in kept for k, v in _profile(e, param)
                   if (k, v) not in mine})  # fmt: skip
    log.warning("%s: %d experiments of another profile left out (%s; they differ in %s)",
                param, len(left), ", ".join(left), ", ".join(diff[:5]))  # fmt: skip
    return kept


def _points(
    exps: Sequence[Experiment],
    param: str,
    metrics: Sequence[str],
    methods: Sequence[str] | None,
    where: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """One row per (experiment, method) that has a value of `param`."""
    rows = []
    keys = row_keys(exps, param)
    for exp in exps:
        if any(exp.params.get(k) != v for k, v in where.items()):
            continue
        for method, values in exp.metrics.items():
            x = _x_of(exp, param, method, keys)
            if x is None or (methods is not None and method not in methods):
                continue
            num = float(x) if _number(x) else None
            text = f"{x:g}" if num is not None else str(x)
            rows.append(
                {"method": method, "x": text, "x_num": num} | {m: values.get(m) for m in metrics}
            )
    return rows


def sweep_frame(
    exps: Sequence[Experiment],
    param: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    methods: Sequence[str] | None = None,
    where: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """`method, x, x_num, <metrics>, n_experiments`: each metric's mean per (method, value).

    `x` is the parameter value as text, `x_num` its number (null for e.g. `all`); `where`
    keeps only experiments whose flat params equal the given values.
    """
    rows = _points(one_profile(_where(exps, where), param), param, metrics, methods, {})
    schema = {
        "method": pl.Utf8,
        "x": pl.Utf8,
        "x_num": pl.Float64,
        **dict.fromkeys(metrics, pl.Float64),
    }
    frame = pl.DataFrame(rows, schema=schema)
    order = list(dict.fromkeys(methods or frame["method"].to_list()))
    return (
        frame.group_by("method", "x", maintain_order=True)
        .agg(
            pl.col("x_num").first(),
            *(pl.col(m).mean() for m in metrics),
            pl.len().alias("n_experiments"),
        )
        .with_columns(
            pl.col("method")
            .replace_strict(order, list(range(len(order))), default=None)
            .alias("_o")
        )
        .sort("_o", "x_num", "x", nulls_last=True)
        .drop("_o")
    )


def flat_frame(
    exps: Sequence[Experiment],
    param: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    methods: Sequence[str] | None = None,
    where: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """For a per-method parameter (`methods.*.<key>`): `method, <metrics>` means of the methods
    that lack the key (e.g. `baseline` in a λ sweep), drawn as dashed reference lines."""
    schema = {"method": pl.Utf8, **dict.fromkeys(metrics, pl.Float64)}
    rows = []
    kept = one_profile(_where(exps, where), param) if param.startswith(PER_ROW) else []
    keys = row_keys(kept, param)
    for exp in kept:
        for method, values in exp.metrics.items():
            keep = methods is None or method in methods
            if (
                keep
                and _x_of(exp, param, method, keys) is None
                and any(k.startswith(f"methods.{method}.") for k in exp.params)
            ):
                rows.append({"method": method} | {m: values.get(m) for m in metrics})
    frame = pl.DataFrame(rows, schema=schema)
    return frame.group_by("method", maintain_order=True).agg(pl.col(m).mean() for m in metrics)


def _where(exps: Sequence[Experiment], where: Mapping[str, Any] | None) -> list[Experiment]:
    """The experiments whose flat params equal ``where``'s values."""
    return [e for e in exps if all(e.params.get(k) == v for k, v in (where or {}).items())]


def slug(param: str) -> str:
    """File stem of a parameter: `methods.*.lambda` → `lambda`, `orderings.curriculum.sigma`
    → `sigma` (an ordering's own parameter), `train.lr` → `train_lr`."""
    if param.startswith("post.*."):
        param = "post_" + param.removeprefix("post.*.")
    elif param.startswith("methods.*."):
        param = param.removeprefix("methods.*.")
    elif param.startswith("orderings.") and param.count(".") >= 2:
        param = param.split(".", 2)[2]
    return param.replace(".", "_").replace("*", "all")


def write_sweeps(
    exps: Sequence[Experiment],
    out_dir: str | Path,
    params: Sequence[str] = DEFAULT_PARAMS,
    metrics: Sequence[str] = DEFAULT_METRICS,
    **kwargs: Any,
) -> list[Path]:
    """For each parameter with at least two values: `<out_dir>/<slug>.csv` and `.png`."""
    logx = bool(kwargs.pop("logx", False))
    written = []
    for param in params:
        frame = sweep_frame(exps, param, metrics, **kwargs)
        if frame["x"].n_unique() < 2:
            log.warning("%s: fewer than two values among %d experiments; no plot", param, len(exps))
            continue
        base = Path(out_dir) / slug(param)
        io.write_text(frame.write_csv(float_precision=6), base.with_suffix(".csv"))
        flat = flat_frame(exps, param, metrics, **kwargs)
        fig = sweep_figure(frame, metrics, param, flat=flat, logx=logx)
        save_png(fig, base.with_suffix(".png"))
        written += [base.with_suffix(".csv"), base.with_suffix(".png")]
        log.info("%s: %d points → %s.{csv,png}", param, frame.height, base)
    return written


def parse_where(items: Sequence[str]) -> dict[str, Any]:
    """``["orderings.curriculum.n_buckets=10", …]`` → ``{key: YAML value}`` (``--where``)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"--where {item!r}: expected key=value, e.g. {DEFAULT_PARAMS[2]}=10")
        out[key] = yaml.safe_load(value)
    return out
