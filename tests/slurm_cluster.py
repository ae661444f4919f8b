"""A real one-node SLURM cluster for a test: Debian's munged, slurmctld and slurmd, run as
root in the foreground from a temporary folder, in a private network namespace.

slurmctld listens on every address of its host (SLURM 22.05 binds `0.0.0.0`; its
`CommunicationParameters=NoInAddrAny` covers every daemon except slurmctld), so the daemons
run in a network namespace of their own (`unshare -n`) that holds only the loopback device:
nothing they open can be reached from outside it. The namespace's loopback gets a second
address (127.0.0.2): glibc's `getaddrinfo(AI_ADDRCONFIG)`, which SLURM uses, finds no IPv4
"configured" where 127.0.0.1 is the only address. The SLURM clients reach the namespace
through wrapper scripts (`nsenter --net=…`) first on the test's PATH, and every process in
the namespace (daemons, slurmstepd, job scripts) is ended by `Cluster.stop`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SBIN = os.pathsep.join(["/usr/sbin", "/usr/bin", "/sbin", "/bin"])
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "sacct", "scontrol")
TOOLS = ("unshare", "nsenter", "ip")
INSTALL = "apt-get install -y slurmctld slurmd slurm-client munge"


def unavailable() -> str | None:
    """Why the cluster cannot start on this machine (None: it can)."""
    if os.geteuid() != 0:
        return (f"not root: the SLURM test runs munged, slurmctld and slurmd as root (CI runs "
                f"as root and installs them: `{INSTALL}`)")  # fmt: skip
    path = f"{os.environ.get('PATH', '')}{os.pathsep}{SBIN}"
    missing = [b for b in (*DAEMONS, *CLIENTS, *TOOLS) if shutil.which(b, path=path) is None]
    if missing:
        return (f"SLURM/munge not installed ({', '.join(missing)} missing): `{INSTALL}` as root "
                "(.ci/run does it where apt-get and root are available)")  # fmt: skip
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        why = probe.stderr.strip()
        return (f"cannot create a private network namespace (`unshare -n`: {why}): the "
                "daemons must not listen beyond loopback")  # fmt: skip
    return None


@dataclass
class Cluster:
    """A started cluster: its folder, the environment its clients need (`env`: the client
    wrappers first on PATH, SLURM_CONF) and its processes."""

    root: Path
    holder: subprocess.Popen[bytes]
    env: dict[str, str] = field(default_factory=dict)
    daemons: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def netns(self) -> str:
        return f"/proc/{self.holder.pid}/ns/net"

    def client(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(list(args), env=self.env, capture_output=True, text=True,
                              check=False, timeout=60)  # fmt: skip
        if check and proc.returncode != 0:
            raise AssertionError(f"{args} failed: {proc.stderr}{self.logs()}")
        return proc.stdout

    def logs(self) -> str:
        return "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                       for p in sorted((self.root / "log").glob("*")))  # fmt: skip

    def stop(self) -> None:
        """Cancel every job, then end every process in the namespace and the namespace."""
        if self.env and self.daemons and all(d.poll() is None for d in self.daemons):
            self.client("scancel", "--me", check=False)
        inside = _in_namespace(self.netns) - {self.holder.pid}
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in inside:
                _kill(pid, sig)
            deadline = time.monotonic() + 10
            while inside and time.monotonic() < deadline:
                inside = {p for p in inside if _alive(p)}
                time.sleep(0.1)
        self.holder.kill()
        self.holder.wait(timeout=10)
        for d in self.daemons:
            d.wait(timeout=10)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _in_namespace(netns: str) -> set[int]:
    """Every process in network namespace `netns` (ours: we created it)."""
    try:
        target = os.readlink(netns)
    except OSError:
        return set()
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "net") == target:
                    pids.add(int(entry.name))
            except OSError:
                continue
    return pids


def _conf(root: Path, host: str) -> str:
    return "\n".join([
        "ClusterName=gridtest", f"SlurmctldHost={host}(127.0.0.1)", "SlurmctldPort=6817",
        "SlurmdPort=6818", "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge",
        f"AuthInfo=socket={root}/munge/munge.socket", "CredType=cred/munge",
        f"StateSaveLocation={root}/state", f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/slurmctld.pid", f"SlurmdPidFile={root}/slurmd.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log", f"SlurmdLogFile={root}/log/slurmd.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
        "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none", "MpiDefault=none", "ReturnToService=2", "KillWait=5",
        "MinJobAge=3600",  # no accounting: squeue is the record of ended jobs
        "SlurmdParameters=config_overrides", "CommunicationParameters=NoInAddrAny",
        f"NodeName={host} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP", "",
    ])  # fmt: skip


def start(root: Path, timeout: float = 180) -> Cluster:  # slurmd registers late under load
    """Start munged, slurmctld and slurmd under `root`; returns once the node is idle."""
    if len(str(root / "munge" / "munge.socket")) > 100:
        raise AssertionError(f"{root}: too long a path for munge's socket (108 bytes)")
    for sub in ("munge", "state", "spool", "log", "bin"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    host = socket.gethostname().split(".")[0]
    (root / "slurm.conf").write_text(_conf(root, host))
    holder = subprocess.Popen(["unshare", "-n", "sleep", "infinity"])
    cluster = Cluster(root, holder)
    try:
        _launch(cluster)
        _wait_idle(cluster, timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _launch(cluster: Cluster) -> None:
    root, path = cluster.root, f"{os.environ.get('PATH', '')}{os.pathsep}{SBIN}"
    while not Path(cluster.netns).exists():
        time.sleep(0.05)
    enter = ["nsenter", f"--net={cluster.netns}"]
    for args in ("link set lo up", "addr add 127.0.0.2/8 dev lo"):
        subprocess.run([*enter, "ip", *args.split()], check=True, capture_output=True)
    for name in CLIENTS:
        exe = shutil.which(name, path=path)
        wrapper = root / "bin" / name
        wrapper.write_text(f'#!/bin/sh\nexec nsenter --net={cluster.netns} {exe} "$@"\n')
        wrapper.chmod(0o755)
    conf = str(root / "slurm.conf")
    cluster.env = {**os.environ, "PATH": f"{root / 'bin'}{os.pathsep}{path}", "SLURM_CONF": conf}
    munge = root / "munge"
    commands = [
        ["munged", "-F", "-f", f"--socket={munge}/munge.socket", f"--key-file={munge}/munge.key",
         f"--pid-file={munge}/munged.pid", f"--seed-file={munge}/seed",
         f"--log-file={root}/log/munged.log"],
        ["slurmctld", "-D", "-i", "-f", conf],
        ["slurmd", "-D", "-f", conf],
    ]  # fmt: skip
    for cmd in commands:
        exe = shutil.which(cmd[0], path=path)
        with (root / "log" / f"{cmd[0]}.out").open("wb") as out:
            proc = subprocess.Popen([*enter, str(exe), *cmd[1:]], stdout=out,
                                    stderr=subprocess.STDOUT, env=cluster.env)  # fmt: skip
        cluster.daemons.append(proc)
        if cmd[0] == "munged":
            _wait_for(lambda: (munge / "munge.socket").exists(), 15, cluster, "munged's socket")


def _wait_for(ready: Callable[[], bool], timeout: float, cluster: Cluster, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if any(d.poll() is not None for d in cluster.daemons):
            break
        time.sleep(0.2)
    raise AssertionError(f"the test cluster did not get {what} within {timeout} s{cluster.logs()}")


def _wait_idle(cluster: Cluster, timeout: float) -> None:
    def idle() -> bool:
        out = cluster.client("sinfo", "-h", "-o", "%T", check=False)
        return out.strip() == "idle"

    _wait_for(idle, timeout, cluster, "an idle node")
