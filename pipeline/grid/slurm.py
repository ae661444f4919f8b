"""SLURM's command-line clients (`sbatch`, `squeue`, `sacct`), and its job states mapped to
what they mean for an experiment.

`squeue --states=all` shows a job for `MinJobAge` (300 s by default) after it ends; `sacct`
shows it for as long as the cluster keeps accounting, and where the cluster has none
(`accounting_storage/none`) it answers an error, which is taken as "no record". A task
that neither reports nor pushed its experiment is then `missing`, as one never submitted.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from pipeline.errors import SetupError

log = logging.getLogger(__name__)

# SLURM job state (squeue %T, sacct State) → the experiment's state
STATES = {
    **dict.fromkeys(["PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                     "RESV_DEL_HOLD", "SUSPENDED", "STOPPED"], "pending"),
    **dict.fromkeys(["RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING"], "running"),
    "COMPLETED": "completed",
    **dict.fromkeys(["FAILED", "NODE_FAIL", "BOOT_FAIL", "SPECIAL_EXIT"], "failed"),
    "OUT_OF_MEMORY": "out of memory",
    **dict.fromkeys(["TIMEOUT", "DEADLINE"], "timed out"),
    "PREEMPTED": "preempted",
    **dict.fromkeys(["CANCELLED", "REVOKED"], "cancelled"),
}  # fmt: skip
ACTIVE = frozenset({"pending", "running"})


class SlurmError(SetupError):
    """A SLURM client is missing or refused a request."""


def _client(name: str, args: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(name)
    if exe is None:
        raise SlurmError(
            f"`{name}` is not on PATH: the grid runs on a SLURM login node (a machine where "
            "`sinfo` answers); on Debian, `apt-get install slurm-client` and the cluster's "
            "slurm.conf (or SLURM_CONF) give the clients"
        )
    proc = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise SlurmError(f"`{name} {' '.join(args)}` failed ({proc.returncode}): "
                         f"{proc.stderr.strip() or proc.stdout.strip()}")  # fmt: skip
    return proc


def sbatch(script: Path, args: Sequence[str]) -> str:
    """Submit `script` with sbatch options `args`; its job id."""
    out = _client("sbatch", ["--parsable", *args, str(script)]).stdout.strip()
    job = out.split(";", 1)[0]
    if not job.isdigit():
        raise SlurmError(f"sbatch answered {out!r} for {script}, not a job id")
    log.info("submitted %s as job %s", script.name, job)
    return job


def scancel(jobs: Iterable[str]) -> None:
    ids = list(jobs)
    if ids:
        _client("scancel", ids)


def states(jobs: Iterable[str]) -> dict[str, str]:
    """`{job id or array task id (123_4): SLURM state}` of `jobs` (array job ids), from squeue
    and, for what squeue no longer shows, sacct where the cluster keeps accounting."""
    wanted = {j for j in jobs if j}
    if not wanted:
        return {}
    found = _parse(_squeue(), wanted)
    proc = _client("sacct", ["-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(sorted(wanted))],
                   check=False)  # fmt: skip
    if proc.returncode == 0:
        for key, state in _parse(proc.stdout, wanted).items():
            found.setdefault(key, state)
    else:
        log.debug("sacct: %s", proc.stderr.strip())
    return found


def _squeue(tries: int = 4) -> str:
    """squeue's `job|state` lines. A controller that does not answer (a timeout under load)
    is asked again; one that never answers is an error, never "no jobs": an experiment read
    as missing would be submitted twice."""
    args = ["--me", "-h", "-r", "--states=all", "-o", "%i|%T"]
    for attempt in range(tries):
        proc = _client("squeue", args, check=False)
        if proc.returncode == 0:
            return proc.stdout
        log.warning("squeue failed (%s); asking again", proc.stderr.strip() or proc.returncode)
        time.sleep(2**attempt)
    last = proc.stderr.strip() or proc.stdout.strip()
    raise SlurmError(f"squeue failed {tries} times, last: {last}; is slurmctld reachable "
                     "(`scontrol ping`)?")  # fmt: skip


def _parse(text: str, wanted: set[str]) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, _, state = line.strip().partition("|")
        job, _, task = key.partition("_")
        if task.startswith("["):  # the tasks of an array not yet split (pending): 123_[0-3]
            key = job
        if job in wanted and state:
            out[key] = state.split()[0].rstrip("+")  # "CANCELLED by 0", "RUNNING+"
    return out


def meaning(state: str | None) -> str:
    """The experiment's state for SLURM state `state` (None: SLURM has no record)."""
    if state is None:
        return "missing"
    return STATES.get(state, state.lower())
