"""Atomic training checkpoints: save every N steps, resume exactly where a killed run stopped.

A checkpoint is one file ``<dir>/checkpoint.pt`` holding the model, optimiser and scheduler
states, the step, the training curve so far and the random number generator states (torch
CPU/CUDA, Python ``random``, NumPy) of every rank. It is written to a temporary file
``.checkpoint.pt.<random>.tmp`` in the same folder and renamed into place (``os.replace``),
so a crash mid-write leaves the previous checkpoint intact. A process killed by SIGKILL can
not delete its temporary file; the next run removes such leftovers when it resumes.

A checkpoint records a fingerprint of everything that determines the run (configuration,
loss, triples and their order, Ψ/ζ, texts, initial weights, number of ranks). A checkpoint
with another fingerprint belongs to another run: it is ignored with a warning and training
starts from scratch (the next save replaces it). Resuming on CPU with the same inputs gives
the same weights, bit for bit, as a run that was never interrupted.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import pickle
import random
import shutil
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler

from pipeline import paths
from pipeline.errors import InputError, is_disk_full
from pipeline.io import disk_full
from pipeline.schemas import TRIPLE_COLUMNS
from pipeline.train.distributed import Rank, gather, used_texts

logger = logging.getLogger(__name__)

CHECKPOINT_FILE = "checkpoint.pt"
CHECKPOINT_ROOT = paths.CHECKPOINTS
"""Where the train stage keeps checkpoints: ``<root>/<method>/[seed-<n>/]fold-<k>/``."""
FORMAT_VERSION = 1
_TMP_GLOB = f".{CHECKPOINT_FILE}.*.tmp"


class CheckpointError(InputError):
    """A checkpoint file exists but cannot be used."""


@dataclass
class TrainState:
    """Progress of a run: optimiser steps done, curve rows, losses since the last row, pairs."""

    step: int = 0
    rows: list[dict[str, float]] = field(default_factory=list)
    window: list[float] = field(default_factory=list)
    pairs: int = 0


def check_checkpoint_args(directory: str | Path | None, every: int | None) -> None:
    """``every`` must be an integer >= 1 and needs a ``directory``."""
    if every is not None and (directory is None or isinstance(every, bool) or every < 1):
        raise InputError(
            "checkpoint_every must be an integer >= 1 and needs a checkpoint_dir; got "
            f"checkpoint_every={every!r}, checkpoint_dir={directory!r}"
        )


def checkpoint_path(directory: str | Path) -> Path:
    return Path(directory) / CHECKPOINT_FILE


def rng_state(device: torch.device) -> dict[str, Any]:
    """RNG states of this process (torch CPU, CUDA of ``device``, Python, NumPy)."""
    _, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": {
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached": float(cached),
        },
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: Mapping[str, Any], device: torch.device) -> None:
    """Restore the states saved by ``rng_state``."""
    torch.set_rng_state(state["torch"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    keys = n["keys"].numpy().astype(np.uint32)
    np.random.set_state(("MT19937", keys, n["pos"], n["has_gauss"], n["cached"]))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def _hash_tensors(h: Any, tensors: Iterable[torch.Tensor]) -> None:
    for t in tensors:
        h.update(str((tuple(t.shape), str(t.dtype))).encode())
        h.update(t.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())


def run_fingerprint(
    settings: Mapping[str, Any],
    inputs: tuple[pl.DataFrame, Mapping[str, str], Mapping[str, str]],
    tensors: Iterable[torch.Tensor],
    model: nn.Module,
) -> str:
    """SHA-256 of what determines a run: ``settings`` (JSON), the triples in order and the
    texts they use (``inputs`` = triples, query texts, document texts), per-triple
    ``tensors`` (Ψ/ζ) and the model's initial weights."""
    triples, queries, docs = inputs
    h = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    ids = (triples[c].cast(pl.String).to_list() for c in TRIPLE_COLUMNS)
    used = (sorted(table.items()) for table in used_texts(triples, queries, docs))
    pairs = (f"{k}\x1e{v}" for k, v in itertools.chain.from_iterable(used))
    for text in itertools.chain(itertools.chain.from_iterable(ids), pairs):
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    _hash_tensors(h, tensors)
    _hash_tensors(h, model.state_dict().values())
    return h.hexdigest()


def save_checkpoint(directory: str | Path, payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` to ``<directory>/checkpoint.pt`` atomically (temp file + rename)."""
    path = checkpoint_path(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{CHECKPOINT_FILE}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with tmp.open("wb") as f:
            torch.save({"format": FORMAT_VERSION, **payload}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except Exception as e:  # torch wraps the OSError of a full disk in its own errors
        if not is_disk_full(e):
            raise
        raise disk_full(path, _tensor_bytes(payload), error=e, room=False) from e
    finally:
        if tmp.exists():
            tmp.unlink()
    _fsync_dir(path.parent)
    return path


def _tensor_bytes(obj: Any) -> int:
    """Bytes of the tensors in a nested payload (what a checkpoint file mostly holds)."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, Mapping):
        return sum(_tensor_bytes(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(_tensor_bytes(v) for v in obj)
    return 0


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. Windows cannot open a directory
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale_temps(directory: str | Path) -> list[Path]:
    """Delete temporary files that a killed writer left in ``directory``; returns them."""
    stale = sorted(Path(directory).glob(_TMP_GLOB))
    for tmp in stale:
        tmp.unlink(missing_ok=True)
    if stale:
        logger.info("removed %d unfinished checkpoint files of a killed run", len(stale))
    return stale


def load_checkpoint(directory: str | Path, expected: str) -> dict[str, Any] | None:
    """The checkpoint in ``directory`` if it belongs to the run ``expected`` (a fingerprint).

    ``None`` when there is none, or when it belongs to another run (logged as a warning). An
    unreadable file raises ``CheckpointError`` naming it and the fix.
    """
    path = checkpoint_path(directory)
    if not path.is_file():
        return None
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as e:
        cause = (str(e).strip().splitlines() or [""])[0][:200]
        raise CheckpointError(
            f"{path}: unreadable training checkpoint ({type(e).__name__}: {cause}); it is "
            "truncated or not a checkpoint of this pipeline; delete it to train from scratch"
        ) from e
    if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise CheckpointError(
            f"{path}: checkpoint format {found!r}, expected {FORMAT_VERSION}; delete it to "
            "train from scratch"
        )
    if data.get("fingerprint") != expected:
        logger.warning(
            "ignoring checkpoint %s (step %s): it was written by a run with other settings or "
            "inputs; training starts from scratch and replaces it",
            path,
            data.get("step"),
        )
        return None
    return data


def clear_checkpoint(directory: str | Path) -> None:
    """Remove the checkpoint, leftover temporary files and the then empty ``directory`` (call
    once the trained model is saved)."""
    folder = Path(directory)
    if not folder.is_dir():
        return
    remove_stale_temps(folder)
    checkpoint_path(folder).unlink(missing_ok=True)
    if not any(folder.iterdir()):
        folder.rmdir()


def clear_method_checkpoints(method: str, root: str | Path = CHECKPOINT_ROOT) -> None:
    """Remove ``<root>/<method>/`` whole (every seed and fold, leftover temporary files and
    folders of other fold counts) and ``<root>`` when it is then empty: the train stage calls
    it once it has written all its outputs. Checkpoints of a stage that DVC completes from
    its cache instead are removed by the next train stage or ``python -m pipeline.doctor``."""
    folder = Path(root, method)
    if folder.is_dir():
        shutil.rmtree(folder)
        logger.info("removed the checkpoints of %s: the stage is complete", method)
    if Path(root).is_dir() and not any(Path(root).iterdir()):
        Path(root).rmdir()


@dataclass
class Checkpointer:
    """Resume from and save to ``directory`` every ``every`` steps (``None``: resume only).

    Under DDP every rank loads the checkpoint and contributes its RNG state; rank 0 writes.
    """

    directory: Path
    every: int | None
    fingerprint: str
    rank: Rank
    device: torch.device

    def resume(self, model: nn.Module, optimizer: Optimizer, scheduler: LRScheduler) -> TrainState:
        """Load the matching checkpoint into the objects; the state to continue from."""
        if self.rank.is_main:
            remove_stale_temps(self.directory)
        data = load_checkpoint(self.directory, self.fingerprint)
        if data is None:
            return TrainState()
        model.load_state_dict(data["model"])
        optimizer.load_state_dict(data["optimizer"])
        scheduler.load_state_dict(data["scheduler"])
        set_rng_state(data["rng"][self.rank.rank], self.device)
        state = TrainState(data["step"], data["rows"], data["window"], data["pairs"])
        if self.rank.is_main:  # a warning: the job processes of train.workers log only those
            logger.warning("resumed training from step %d of checkpoint %s (saved by an "
                           "interrupted run with the same settings and inputs)", state.step,
                           checkpoint_path(self.directory))  # fmt: skip
        return state

    def step_done(
        self, state: TrainState, model: nn.Module, optimizer: Optimizer, scheduler: LRScheduler
    ) -> None:
        """Save after every ``every``-th step (all ranks must call this)."""
        if self.every is None or state.step % self.every:
            return
        rngs = gather(rng_state(self.device), self.rank)
        if not self.rank.is_main:
            return
        payload = {
            "fingerprint": self.fingerprint,
            "step": state.step,
            "rows": state.rows,
            "window": list(state.window),
            "pairs": state.pairs,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": rngs,
        }
        path = save_checkpoint(self.directory, payload)
        logger.debug("saved checkpoint %s at step %d", path, state.step)
