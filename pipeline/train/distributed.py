"""Data-parallel training: DistributedDataParallel over ``devices`` processes (DESIGN §6).

Every global batch of ``batch_size`` consecutive triples is cut into ``devices`` consecutive
shards of ``batch_size / devices`` triples, one per rank, so the training order of the
ordered triples is kept. Each rank's loss is weighted by its share of the batch, so the
gradient that DDP averages is exactly the gradient of the global batch's mean loss (the
losses are means over triples); a rank whose shard of a short last batch is empty runs one
triple with weight 0 to take part in the gradient all-reduce. The logged loss is the
all-reduced global mean, the same number a single process computes (up to float rounding).

Two ways to run it:

- ``train_model`` with ``TrainConfig.devices > 1`` in a plain process starts the ranks with
  ``torch.multiprocessing.spawn`` (``launch``); rank 0 hands the trained weights back and
  the caller's model is updated in place, so a stage needs no change;
- under ``torchrun`` (``WORLD_SIZE`` etc. in the environment, also across machines) every
  rank runs the stage itself; ``init_from_env`` joins the process group and the stage saves
  only where ``is_main()``.

Backend: ``nccl`` on CUDA (one GPU per rank), ``gloo`` on CPU.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from pipeline.errors import InputError, SetupError
from pipeline.models.encoders import resolve_device

logger = logging.getLogger(__name__)

TIMEOUT = timedelta(minutes=10)
"""How long a rank waits for the others in a collective before it fails (instead of hanging)."""
_ERROR_TYPES: tuple[type[Exception], ...] = (
    FileNotFoundError,
    FloatingPointError,
    ValueError,
    RuntimeError,
)


@dataclass(frozen=True)
class Rank:
    """This process's place in the process group (``rank`` 0 of ``world`` 1 when alone)."""

    rank: int = 0
    world: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def current() -> Rank:
    """The initialised process group's rank and size, else rank 0 of 1."""
    if dist.is_available() and dist.is_initialized():
        return Rank(dist.get_rank(), dist.get_world_size())
    return Rank()


def is_main() -> bool:
    """True on rank 0 (and without a process group): the process that writes outputs."""
    return current().is_main


def init_from_env(device: str) -> Rank:
    """Join the process group that ``torchrun`` describes in the environment, if any."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and dist.is_available() and not dist.is_initialized():
        backend = "nccl" if resolve_device(device).type == "cuda" else "gloo"
        dist.init_process_group(backend, init_method="env://", timeout=TIMEOUT)
        logger.info("joined %s process group: rank %d of %d", backend, dist.get_rank(), world)
    return current()


def check_world(devices: int, batch_size: int, rank: Rank) -> None:
    """Reject a ``torchrun`` process count that disagrees with ``train.devices``/``batch_size``."""
    if devices not in (1, rank.world) or batch_size % rank.world:
        raise InputError(
            f"{rank.world} training processes were started (torchrun --nproc_per_node), but "
            f"train.devices is {devices} and train.batch_size {batch_size}; set train.devices "
            "to the number of processes and train.batch_size to a multiple of it"
        )


def rank_device(device: str, rank: Rank) -> torch.device:
    """The device of this rank: ``cuda:<local rank>`` for CUDA, else ``device`` as given."""
    dev = resolve_device(device)
    if dev.type != "cuda" or rank.world == 1:
        return dev
    local = int(os.environ.get("LOCAL_RANK", rank.rank))
    if local >= torch.cuda.device_count():
        raise SetupError(
            f"rank {rank.rank} needs CUDA device {local} but {torch.cuda.device_count()} are "
            "visible; set train.devices to at most the number of GPUs or train.device to cpu"
        )
    torch.cuda.set_device(local)
    return torch.device("cuda", local)


def wrap(model: nn.Module, device: torch.device, rank: Rank) -> nn.Module:
    """``model`` under DistributedDataParallel when there are several ranks."""
    if rank.world == 1:
        return model
    ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=ids)


def shard(idx: list[int], batch_size: int, rank: Rank) -> tuple[list[int], float]:
    """This rank's consecutive slice of the global batch ``idx`` and its loss weight.

    The weight ``world × len(slice) / len(idx)`` makes DDP's gradient average equal the
    gradient of the global mean loss. An empty slice (short last batch) becomes the batch's
    first triple with weight 0.
    """
    if rank.world == 1:
        return idx, 1.0
    per = batch_size // rank.world
    mine = idx[rank.rank * per : (rank.rank + 1) * per]
    if not mine:
        return idx[:1], 0.0
    return mine, rank.world * len(mine) / len(idx)


def global_mean(value: float, weight: float, device: torch.device, rank: Rank) -> float:
    """Global batch mean loss from each rank's local mean ``value`` and ``shard`` weight."""
    if rank.world == 1:
        return value
    t = torch.tensor([value * weight / rank.world], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t.item())


def gather(obj: Any, rank: Rank) -> list[Any]:
    """``obj`` of every rank, in rank order (a list of one when alone)."""
    if rank.world == 1:
        return [obj]
    out: list[Any] = [None] * rank.world
    dist.all_gather_object(out, obj)
    return out


def barrier(rank: Rank) -> None:
    if rank.world > 1:
        dist.barrier()


def used_texts(
    triples: pl.DataFrame, queries: Mapping[str, str], docs: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The query and document texts that ``triples`` use (what a spawned rank receives)."""
    qids = triples["query_id"].cast(pl.String).unique(maintain_order=True).to_list()
    both = pl.concat([triples["pos_doc_id"], triples["neg_doc_id"]]).cast(pl.String)
    dids = both.unique(maintain_order=True).to_list()
    return (
        {q: queries[q] for q in qids if q in queries},
        {d: docs[d] for d in dids if d in docs},
    )


def launch(
    train: Callable[..., Any],
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    device: str,
) -> Any:
    """Run ``train(model, *args, **kwargs)`` on ``args[-1].devices`` spawned ranks (``args[-1]``
    is the ``TrainConfig``); returns rank 0's result.

    The ranks meet through a file store in a temporary folder. Rank 0's trained weights are
    loaded into ``model`` (in place); an error in any rank is raised here with its type
    (ValueError, RuntimeError, ...) and message.
    """
    devices = int(args[-1].devices)
    level = logging.getLogger().getEffectiveLevel()
    threads = max(1, torch.get_num_threads() // devices)
    with tempfile.TemporaryDirectory(prefix="pipeline-ddp-") as tmp:
        folder = Path(tmp)
        # through a file, not spawn's pickler, which would move the weights to shared memory
        # (small in containers) and let every rank step the same tensors
        torch.save(model, folder / "model.pt")
        job = (train, args, dict(kwargs), str(folder), level, threads, device)
        logger.info("starting %d training processes (DistributedDataParallel)", devices)
        try:
            mp.spawn(_worker, args=(devices, job), nprocs=devices, join=True)
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as e:
            _reraise(folder, devices, e)
        out = torch.load(folder / "result.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(out["state"])
    return out["result"]


def _worker(rank: int, world: int, job: tuple[Any, ...]) -> None:
    train, args, kwargs, folder, level, threads, device_name = job
    model = torch.load(Path(folder, "model.pt"), map_location="cpu", weights_only=False)
    if not logging.getLogger().handlers:
        fmt = f"%(asctime)s %(levelname)s rank{rank} %(name)s: %(message)s"
        logging.basicConfig(level=level, format=fmt, stream=sys.stderr)
    torch.set_num_threads(threads)
    backend = "nccl" if resolve_device(device_name).type == "cuda" else "gloo"
    os.environ["LOCAL_RANK"] = str(rank)
    init = Path(folder, "store").as_uri()
    dist.init_process_group(backend, init_method=init, rank=rank, world_size=world, timeout=TIMEOUT)
    try:
        result = train(model, *args, **kwargs)
        if rank == 0:
            state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
            torch.save({"state": state, "result": result}, Path(folder, "result.pt"))
    except BaseException as e:
        kind = next((t.__name__ for t in _ERROR_TYPES if isinstance(e, t)), "RuntimeError")
        Path(folder, f"error-{rank}.txt").write_text(f"{kind}\n{e}", encoding="utf-8")
        raise
    finally:
        dist.destroy_process_group()


def _reraise(folder: Path, world: int, cause: Exception) -> None:
    for r in range(world):
        path = folder / f"error-{r}.txt"
        if path.is_file():
            kind, _, message = path.read_text(encoding="utf-8").partition("\n")
            error = {t.__name__: t for t in _ERROR_TYPES}.get(kind, RuntimeError)
            raise error(f"{message} (training rank {r} of {world})") from cause
    raise SetupError(f"a training process died without a Python error: {cause}") from cause
