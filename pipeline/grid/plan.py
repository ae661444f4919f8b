"""What a submission runs: the stages every experiment shares (run once, by the data job),
the override sets they need, and the two job scripts with their sbatch options."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from pipeline.errors import InputError
from pipeline.grid.spec import Experiment, GridSpec
from pipeline.grid.workspace import Submission


def shared_stages(root: Path, experiments: Sequence[Experiment]) -> list[str]:
    """The stages the experiments' targets depend on (DVC's stage graph, as `dvc dag` draws
    it) that belong to no method (no `@` in their name: `extract`, `score`, …), in
    dvc.yaml's order."""
    import networkx as nx
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        graph = repo.index.graph
        by_name = {s.addressing: s for s in graph.nodes}
        targets = {t for e in experiments for t in e.targets}
        unknown = sorted(targets - set(by_name))
        if unknown:
            raise InputError(f"{root / 'dvc.yaml'}: no stage {unknown[0]!r}; the grid runs "
                             "`evaluate@<method>` for each method of params.yaml")  # fmt: skip
        needed = {d for t in targets for d in nx.descendants(graph, by_name[t])}
        return [s.addressing for s in repo.index.stages if s in needed and "@" not in s.addressing]


def _declared(root: Path, stages: Sequence[str]) -> list[str]:
    """The params.yaml keys that `stages` read: their params slices' keys
    (`pipeline.deps.slices`, issue 42: no stage but `params` declares `params:` in dvc.yaml)."""
    from pipeline.deps.slices import held

    raw: dict[str, Any] = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    resolved = held(raw)
    return [key for name in stages for key, _ in resolved.get(name, [])]


def prepare_sets(root: Path, stages: Sequence[str], experiments: Sequence[Experiment]
                 ) -> list[list[str]]:  # fmt: skip
    """The distinct sets of overrides the shared stages read (an override of a key no shared
    stage declares, such as a method's λ or the seeds, changes none of their outputs)."""
    keys = _declared(root, stages)

    def read(override: str) -> bool:
        key = override.split("=", 1)[0].lstrip("+~")
        return ":" not in key and any(key == k or key.startswith(f"{k}.") or
                                      k.startswith(f"{key}.") for k in keys)  # fmt: skip

    sets: dict[tuple[str, ...], None] = {}
    for exp in experiments:
        sets.setdefault(tuple(o for o in exp.overrides if read(o)), None)
    return [list(s) for s in sets]


def script(sub: Submission, kind: str) -> Path:
    """The job script of `kind` (`prepare`: the data job; `task`: an array task)."""
    path = Path(sub.workdir) / f"{kind}.sbatch"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = "prepare" if kind == "prepare" else 'task "$SLURM_ARRAY_TASK_ID"'
    submission = shlex.quote(str(sub.path))
    path.write_text(
        "#!/bin/bash\n"
        "# Written by `python -m pipeline.grid submit`; sbatch options are on its command line.\n"
        f"cd {shlex.quote(sub.repo)}\n"
        f"exec {shlex.quote(sys.executable)} -m pipeline.grid _run {submission} {entry}\n",
        encoding="utf-8",
    )
    return path


def sbatch_args(spec: GridSpec, sub: Submission, kind: str) -> list[str]:
    """sbatch options of the data job (`prepare`) or of the array (`task`)."""
    logs = Path(sub.workdir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    common = [f"--job-name=grid-{spec.name}-{kind}", f"--chdir={sub.repo}"]
    if kind == "prepare":
        return [*common, f"--output={logs}/prepare-%j.out", *spec.prepare.args()]
    n, data_job = len(sub.experiments), sub.jobs.get("prepare", "<data job>")
    array = f"0-{n - 1}" + (f"%{spec.max_parallel}" if spec.max_parallel else "")
    return [
        *common, f"--array={array}", f"--output={logs}/%A_%a.out",
        f"--dependency=afterok:{data_job}", "--kill-on-invalid-dep=yes",
        *spec.task.args(),
    ]  # fmt: skip
