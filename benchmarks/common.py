"""Shared helpers of the benchmark scripts: timing, peak memory, the machine, JSON rows.

Every benchmark times our implementation and the naive one on the same input in the same
process, repeats both ``--repeats`` times (default 3), prints ours / naive / ratio, and
appends one JSON row per run to ``benchmarks/results/<name>.jsonl``. ``benchmarks/README.md``
quotes the medians.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
log = logging.getLogger("benchmarks")


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--repeats", type=int, default=3, help="timed runs of each side (default 3)")
    p.add_argument("--out", type=Path, default=None, help="JSONL file (default results/<name>)")
    return p


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, torch/CUDA device: the context of every row."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        mem_gib = round(pages / 2**30, 1)
    except (ValueError, OSError):
        pass
    info: dict[str, Any] = {"cpu": cpu, "cores": os.cpu_count(), "mem_gib": mem_gib}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return info


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``(seconds, result)`` of one call."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def peak_rss_mib() -> float:
    """This process's peak resident set size so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_row(name: str, row: dict[str, Any], out: Path | None = None) -> None:
    """Append ``row`` (plus date and machine) to the benchmark's JSONL file, and print it."""
    path = out or RESULTS / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    full = {"benchmark": name, "date": dt.date.today().isoformat(), **row, "machine": machine()}
    with path.open("a") as f:
        f.write(json.dumps(full) + "\n")
    log.info("%s", json.dumps(row))


def report(
    name: str, unit: str, ours: list[float], naive: list[float], higher: bool
) -> dict[str, Any]:
    """Medians of both sides and their ratio (>1 = ours is better), logged as one line."""
    o, n = statistics.median(ours), statistics.median(naive)
    ratio = (o / n) if higher else (n / o)
    msg = "%s: ours %.4g %s, naive %.4g %s, speed-up (ours vs naive) %.2fx"
    log.info(msg, name, o, unit, n, unit, ratio)
    return {"ours_median": o, "naive_median": n, "speedup": ratio, "unit": unit}


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
