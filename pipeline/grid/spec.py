"""A grid of experiments (methods × seeds × `-S` overrides) and each one's deterministic name.

A grid file is a small YAML whose keys are :class:`GridSpec`'s fields; the command line can
replace its methods and seeds and add overrides. Overrides use `dvc exp run -S` syntax and
DVC's own parser, so `k=a,b,c` is a sweep (one experiment per value, a product across keys)
exactly as `dvc exp run -S 'k=a,b,c' --queue` queues it. An override of another method's
section (`methods.<other>.…`) is left out of a method's experiments: it would change nothing
that method runs, and two experiments would differ only in their names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

import yaml

from pipeline.config import Checked, ParamsError, Range, build

SEED_KEY = "train.seeds"
"""Each experiment of a grid with seeds trains one seed: `-S 'train.seeds=[<seed>]'`."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,60}$")


@dataclass(frozen=True)
class Resources(Checked):
    """One SLURM job's request: sbatch's `--cpus-per-task`, `--mem`, `--time`, `--gres`,
    `--partition`, then `sbatch` (further options, verbatim, e.g. `--account=lab`)."""

    cpus: Annotated[int, Range(ge=1)] = 1
    mem: str | None = None
    time: str | None = None
    gres: str | None = None
    partition: str | None = None
    sbatch: list[str] = field(default_factory=list)

    def args(self) -> list[str]:
        """The sbatch options of this request."""
        out = [f"--cpus-per-task={self.cpus}"]
        named = (("mem", self.mem), ("time", self.time), ("gres", self.gres))
        out += [f"--{k}={v}" for k, v in (*named, ("partition", self.partition)) if v]
        return out + list(self.sbatch)


@dataclass(frozen=True)
class GridSpec:
    """A grid file. `name` names the grid's folder and SLURM jobs; `methods` are keys of
    params.yaml's `methods:`; `seeds` (optional) gives each experiment one seed; `set` holds
    `-S` overrides (sweeps with commas); `task` is each array task's request, `prepare` the
    data-stage job's; `max_parallel` caps running tasks (sbatch `--array=…%N`);
    `git_remote`/`dvc_remote` receive the experiments (null: DVC's default remote)."""

    name: str
    methods: list[str]
    seeds: list[Annotated[int, Range(ge=0)]] | None = None
    set_: list[str] = field(default_factory=list)
    task: Resources = field(default_factory=Resources)
    prepare: Resources = field(default_factory=Resources)
    max_parallel: Annotated[int, Range(ge=1)] | None = None
    git_remote: str = "origin"
    dvc_remote: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ParamsError(
                f"params key 'name': {self.name!r} must be 1-61 letters, digits, '_', '.' or "
                "'-' (it names a folder and SLURM jobs)"
            )
        if not self.methods:
            raise ParamsError("params key 'methods': list at least one method")
        if self.seeds and any(o.split("=", 1)[0].lstrip("+~") == SEED_KEY for o in self.set_):
            raise ParamsError(f"params key 'set': {SEED_KEY} is set by `seeds:` (one seed per "
                              "experiment); remove it from `set`")  # fmt: skip


@dataclass(frozen=True)
class Experiment:
    """One grid entry: its `dvc exp run` name, method, seed and `-S` overrides."""

    name: str
    method: str
    seed: int | None
    overrides: tuple[str, ...]

    @property
    def targets(self) -> tuple[str, ...]:
        """The stages it runs: the method's evaluation and what that needs."""
        return (f"evaluate@{self.method}",)

    def run_args(self) -> list[str]:
        """`dvc exp run`'s arguments for this experiment."""
        sets = [a for o in self.overrides for a in ("-S", o)]
        return ["exp", "run", "-n", self.name, *sets, *self.targets]


def load(path: Path | None, methods: Sequence[str] = (), seeds: Sequence[int] = (),
         sets: Sequence[str] = (), name: str | None = None) -> GridSpec:  # fmt: skip
    """The grid of file `path` (None: the command line alone), its methods, seeds and name
    replaced where given, `sets` added to its overrides."""
    raw: dict[str, Any] = {}
    if path is not None:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, Mapping):
            raise ParamsError(f"{path}: expected a mapping of grid keys, got {loaded!r}")
        raw = dict(loaded)
    raw.update({k: v for k, v in (("methods", list(methods)), ("seeds", list(seeds))) if v})
    raw["set"] = [*(raw.get("set") or []), *sets]
    if name:
        raw["name"] = name
    where = f"{path}: " if path else ""
    try:
        task, prepare = (build(Resources, raw.pop(k, None), k) for k in ("task", "prepare"))
        return replace(build(GridSpec, raw, "grid"), task=task, prepare=prepare)
    except ParamsError as e:
        raise ParamsError(f"{where}{e} (grid file keys: docs/paper-scale.md, "
                          "'Running the grid on a cluster')") from e  # fmt: skip


def expand(spec: GridSpec) -> list[Experiment]:
    """Every experiment of the grid, in a fixed order (methods, then seeds, then sweeps),
    each once."""
    from dvc.utils.cli_parse import to_path_overrides
    from dvc.utils.hydra import get_hydra_sweeps

    sweeps = get_hydra_sweeps(to_path_overrides(spec.set_)) if spec.set_ else [{}]
    out: dict[str, Experiment] = {}
    for method in spec.methods:
        seeds: list[int | None] = list(spec.seeds) if spec.seeds else [None]
        for seed in seeds:
            for sweep in sweeps:
                own = [o for o in _flat(sweep) if _applies(o, method)]
                exp = experiment(method, seed, own)
                out.setdefault(exp.name, exp)
    return list(out.values())


def experiment(method: str, seed: int | None, overrides: Iterable[str]) -> Experiment:
    """The experiment of `method` at `seed` with `overrides`, named from them alone:
    `<method>[-s<seed>][-<key><value>…]-<hash>`. The readable part holds the method's own
    settings (`methods.<method>.…`, `orderings.…`: λ, σ, …); the hash of all the sorted
    overrides keeps names distinct whatever else differs."""
    rest = tuple(overrides)
    seeded = rest if seed is None else (f"{SEED_KEY}=[{seed}]", *rest)
    parts = [method] + ([f"s{seed}"] if seed is not None else [])
    if rest:
        own = [o for o in rest if o.startswith((f"methods.{method}.", "orderings."))]
        slug = "-".join(_slug(o) for o in own)[:40].strip("-.")
        digest = hashlib.sha1("\n".join(sorted(rest)).encode()).hexdigest()[:6]
        parts += [slug, digest] if slug else [digest]
    return Experiment("-".join(parts), method, seed, seeded)


def _flat(sweep: Mapping[str, list[str]]) -> list[str]:
    """One sweep point's overrides as `-S` strings (`file:key=value` outside params.yaml)."""
    return [o if path == "params.yaml" else f"{path}:{o}" for path, os_ in sweep.items()
            for o in os_]  # fmt: skip


def _applies(override: str, method: str) -> bool:
    key = override.split("=", 1)[0].lstrip("+~")
    parts = key.split(".")
    return not (len(parts) > 1 and parts[0] == "methods" and parts[1] != method)


def _slug(override: str) -> str:
    key, _, value = override.partition("=")
    text = key.rsplit(".", 1)[-1] + value
    return re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9_.-]+", "_", text))
