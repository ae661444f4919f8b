"""The login-node side: submit a grid (a data job, then an array the data job gates), map
SLURM's states to experiments, pull the finished experiments back as DVC experiments.

State lives in `<repo>/.dvc/tmp/grid/<grid name>/` (git-ignored, on the repository's file
system, which the compute nodes share): `submissions/<n>.json` (what each `submit` sent),
`<kind>.sbatch` (the job scripts), `logs/` (one log per job and array task) and `ws/` (the
jobs' workspaces while they run).
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import InputError
from pipeline.grid import plan, slurm
from pipeline.grid.spec import Experiment, GridSpec, expand
from pipeline.grid.workspace import Submission, dvc

log = logging.getLogger(__name__)

DONE = frozenset({"done", "collected"})


class GridError(InputError):
    """The repository or the grid is not ready to submit (the message says the fix)."""


@dataclasses.dataclass(frozen=True)
class Row:
    """One experiment's state: `collected` (its ref is here), `done` (pushed to the git
    remote), or SLURM's state mapped (`pending`, `running`, `failed`, `timed out`,
    `preempted`, `cancelled`, `out of memory`, `missing`)."""

    name: str
    state: str
    job: str = ""
    slurm_state: str = ""
    log: str = ""


def workdir(root: Path, spec: GridSpec) -> Path:
    return root / ".dvc" / "tmp" / "grid" / spec.name


def _out(cmd: list[str], root: Path) -> str:
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise GridError(f"`{' '.join(cmd)}` failed in {root}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def base_commit(root: Path) -> str:
    return _out(["git", "rev-parse", "HEAD"], root)


def exp_ref(base: str, name: str) -> str:
    """DVC's git ref of experiment `name` on baseline commit `base`."""
    return f"refs/exps/{base[:2]}/{base[2:]}/{name}"


def _remote_refs(root: Path, remote: str) -> set[str]:
    text = _out(["git", "ls-remote", "--refs", remote, "refs/exps/*"], root)
    return {line.split("\t", 1)[1] for line in text.splitlines() if "\t" in line}


def _local_refs(root: Path, base: str) -> set[str]:
    prefix = f"refs/exps/{base[:2]}/{base[2:]}/"
    return set(_out(["git", "for-each-ref", "--format=%(refname)", prefix], root).split())


def submissions(root: Path, spec: GridSpec) -> list[Submission]:
    folder = workdir(root, spec) / "submissions"
    paths = sorted(folder.glob("*.json"), key=lambda p: int(p.stem)) if folder.is_dir() else []
    return [Submission.read(p) for p in paths]


def status(root: Path, spec: GridSpec) -> list[Row]:
    """Every experiment of the grid on the current commit, with its state."""
    base = base_commit(root)
    pushed, here = _remote_refs(root, spec.git_remote), _local_refs(root, base)
    latest: dict[str, tuple[Submission, int]] = {}
    for sub in submissions(root, spec):
        if sub.base == base and "array" in sub.jobs:
            latest.update({e["name"]: (sub, i) for i, e in enumerate(sub.experiments)})
    known = slurm.states(s.jobs["array"] for s, _ in latest.values()) if latest else {}
    rows = []
    for exp in expand(spec):
        ref = exp_ref(base, exp.name)
        if ref in here or ref in pushed:
            rows.append(Row(exp.name, "collected" if ref in here else "done"))
            continue
        if exp.name not in latest:
            rows.append(Row(exp.name, "missing"))
            continue
        sub, i = latest[exp.name]
        job = f"{sub.jobs['array']}_{i}"
        state = known.get(job) or known.get(sub.jobs["array"])  # a pending array, not split
        meaning = slurm.meaning(state)
        if meaning == "completed":  # ended without pushing its experiment
            meaning = "failed"
        logfile = Path(sub.workdir) / "logs" / f"{job}.out"
        rows.append(Row(exp.name, meaning, job, state or "", str(logfile)))
    return rows


def data_job(root: Path, spec: GridSpec) -> Row | None:
    """The latest submission's data job on the current commit (None: none submitted)."""
    base = base_commit(root)
    subs = [s for s in submissions(root, spec) if s.base == base and "prepare" in s.jobs]
    if not subs:
        return None
    job = subs[-1].jobs["prepare"]
    state = slurm.states([job]).get(job)
    logfile = Path(subs[-1].workdir) / "logs" / f"prepare-{job}.out"
    return Row("(data stages)", slurm.meaning(state), job, state or "", str(logfile))


def submit(root: Path, spec: GridSpec, dry_run: bool = False) -> Submission | None:
    """Submit the grid's experiments that are neither done nor queued nor running: the data
    job, then one array task each, gated on the data job (`--dependency=afterok`). None when
    there is nothing to submit."""
    _check_clean(root)
    rows = {r.name: r for r in status(root, spec)}
    todo = [e for e in expand(spec) if rows[e.name].state not in DONE | slurm.ACTIVE]
    busy = sum(r.state in slurm.ACTIVE for r in rows.values())
    done = sum(r.state in DONE for r in rows.values())
    log.info("grid %s: %d experiments, %d done, %d queued or running, %d to submit",
             spec.name, len(rows), done, busy, len(todo))  # fmt: skip
    if not todo:
        return None
    validate(root, todo)
    sub = _submission(root, spec, todo)
    if dry_run:
        for kind in ("prepare", "task"):
            args = " ".join(plan.sbatch_args(spec, sub, kind))
            log.info("dry run: would submit %s with %s", plan.script(sub, kind), args)
        return sub
    sub.save()
    for kind, key in (("prepare", "prepare"), ("task", "array")):
        sub.jobs[key] = slurm.sbatch(plan.script(sub, kind), plan.sbatch_args(spec, sub, kind))
        sub.save()
    return sub


def _check_clean(root: Path) -> None:
    changed = _out(["git", "status", "--porcelain", "--untracked-files=no"], root)
    if changed:
        raise GridError(
            f"{root}: uncommitted changes ({', '.join(line[3:] for line in changed.splitlines())}"
            "); the grid runs HEAD's commit in fresh clones, without them. Commit them (or "
            "`git stash`), then submit again"
        )


def validate(root: Path, experiments: Sequence[Experiment]) -> None:
    """Each experiment's method exists and its overrides give valid params (as `dvc exp
    run -S` applies them), checked before anything is submitted (once per override set)."""
    from dvc.utils.cli_parse import to_path_overrides
    from dvc.utils.hydra import apply_overrides

    from pipeline.params import get_method, load_params

    base = (root / "params.yaml").read_text(encoding="utf-8")
    by_set: dict[tuple[str, ...], list[Experiment]] = {}
    for exp in experiments:
        by_set.setdefault(exp.overrides, []).append(exp)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "params.yaml"
        for overrides, exps in by_set.items():
            path.write_text(base, encoding="utf-8")
            try:
                mine = to_path_overrides(list(overrides)).get("params.yaml", [])
                if mine:
                    apply_overrides(str(path), mine)
                params = load_params(path)
            except Exception as e:  # DVC's parse errors and ours alike
                raise _invalid(exps[0], e) from e
            for exp in exps:
                try:
                    get_method(params, exp.method)
                except Exception as e:
                    raise _invalid(exp, e) from e


def _invalid(exp: Experiment, e: Exception) -> GridError:
    cause = f" ({e.__cause__})" if e.__cause__ else ""
    return GridError(f"experiment {exp.name} ({' '.join(exp.overrides) or 'no -S'}): {e}{cause}")


def _submission(root: Path, spec: GridSpec, todo: Sequence[Experiment]) -> Submission:
    number = max((s.number for s in submissions(root, spec)), default=0) + 1
    stages = plan.shared_stages(root, todo)
    name, url = dvc_remote(root, spec.dvc_remote)
    return Submission(
        number=number, grid=spec.name, repo=str(root), base=base_commit(root),
        workdir=str(workdir(root, spec)), cache_dir=_out(dvc("cache", "dir"), root),
        git_remote=spec.git_remote, git_url=git_url(root, spec.git_remote),
        origin=git_url(root, "origin") if _has_remote(root, "origin") else None,
        identity=_identity(root),
        dvc_remote=name, dvc_url=url, shared_stages=stages,
        prepare_sets=plan.prepare_sets(root, stages, todo),
        experiments=[{**dataclasses.asdict(e), "targets": list(e.targets),
                      "run_args": e.run_args()} for e in todo],
    )  # fmt: skip


def _identity(root: Path) -> dict[str, str]:
    """The repository's git `user.name` and `user.email`, where set."""
    out = {}
    for key in ("user.name", "user.email"):
        proc = subprocess.run(["git", "config", key], cwd=root, capture_output=True, text=True,
                              check=False)  # fmt: skip
        if proc.stdout.strip():
            out[key] = proc.stdout.strip()
    return out


def _has_remote(root: Path, name: str) -> bool:
    return name in _out(["git", "remote"], root).split()


def git_url(root: Path, remote: str) -> str:
    """The URL of git remote `remote` (a local path made absolute)."""
    try:
        url = _out(["git", "remote", "get-url", remote], root)
    except GridError as e:
        raise GridError(f"{e}; the tasks push their experiments to the git remote "
                        f"{remote!r}: `git remote add {remote} <url>` (or set "
                        "`git_remote:` in the grid file)") from e  # fmt: skip
    local = (root / url).resolve()
    return str(local) if "://" not in url and ":" not in url.split("/")[0] else url


def dvc_remote(root: Path, name: str | None) -> tuple[str, str]:
    """`(name, url)` of DVC remote `name` (None: the default one), from `dvc config --list`
    (every level merged; `dvc remote list` wraps a long URL over lines)."""
    config = {}
    for line in _out(dvc("config", "--list"), root).splitlines():
        key, sep, value = line.partition("=")
        if sep:
            config[key.strip()] = value.strip()
    listed = {k.split(".")[1]: (v, False) for k, v in config.items()
              if k.startswith("remote.") and k.endswith(".url") and k.count(".") == 2}  # fmt: skip
    default = config.get("core.remote")
    chosen = name or default
    if chosen not in listed:
        raise GridError(
            f"{root}: no DVC remote {chosen or '(default)'!r} (known: {sorted(listed)}); the "
            "tasks push their outputs there: `dvc remote add -d <name> <url>` (a directory "
            "all nodes see, or s3://…, ssh://…), or set `dvc_remote:` in the grid file"
        )
    return chosen, listed[chosen][0]


def collect(root: Path, spec: GridSpec) -> list[Row]:
    """Pull every done experiment of the grid (`dvc exp pull`: its git ref, and its outputs
    from the DVC remote); the rows after pulling."""
    base = base_commit(root)
    names = [r.name for r in status(root, spec) if r.state == "done"]
    if names:
        name, _ = dvc_remote(root, spec.dvc_remote)
        refs = [exp_ref(base, n) for n in names]
        _out(dvc("exp", "pull", "-r", name, spec.git_remote, *refs), root)
        log.info("collected %d experiments: %s", len(names), ", ".join(names))
    rows = status(root, spec)
    left = [f"{r.name} ({r.state})" for r in rows if r.state not in DONE]
    if left:
        log.warning("%d of %d experiments not done yet: %s; `python -m pipeline.grid "
                    "status` for their jobs and logs, `submit` again to rerun the failed",
                    len(left), len(rows), ", ".join(left))  # fmt: skip
    return rows
