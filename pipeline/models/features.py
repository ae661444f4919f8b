"""Frozen-bottom features (``data/features.safetensors``): text key → states.

:func:`compute_features` runs the frozen bottom of ``model.arch`` over every text in
length-sorted batches, spread over ``workers`` processes (each batch is computed as one
process alone would compute it, so the states do not depend on the number of workers).
Keys ``("q", query_id)`` / ``("d", doc_id)`` are stored as ``"q\\x1f<id>"``; written
atomically (temporary file, then rename).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safetensors.torch import load_file, save_file
from torch import Tensor

from pipeline.io import ArtifactError, atomic_path
from pipeline.models.base import Key, Ranker
from pipeline.sections import ModelParams

SEP = "\x1f"


def save_features(features: Mapping[Key, Tensor], path: str | Path) -> None:
    tensors = {SEP.join(k): v.contiguous() for k, v in features.items()}
    size = sum(v.numel() * v.element_size() for v in tensors.values())
    with atomic_path(path, suffix=".safetensors", needed=size) as tmp:
        save_file(tensors, str(tmp))


def load_features(path: str | Path) -> dict[Key, Tensor]:
    p = Path(path)
    if not p.is_file():
        raise ArtifactError(f"{p}: features file not found; run `dvc repro features`")
    try:
        tensors = load_file(str(p))
    except Exception as exc:  # safetensors raises its own error types for bad files
        raise ArtifactError(
            f"{p}: unreadable features file ({exc}); rerun the features stage"
        ) from exc
    return {tuple(k.split(SEP)): v for k, v in tensors.items()}


@dataclass(frozen=True)
class _Batch:
    """One length-sorted batch of sequences whose states a process computes."""

    index: int
    keys: list[Key]

    @property
    def name(self) -> str:
        return f"batch-{self.index}"


@dataclass(frozen=True)
class _Setup:
    """What each process builds its ranker from (sent once to each worker)."""

    cfg: ModelParams
    seed: int
    texts: tuple[Mapping[str, str], Mapping[str, str]]


_RANKERS: dict[int, Ranker] = {}


def _ranker(setup: _Setup) -> Ranker:
    """This process's ranker of ``setup``, built and bound once."""
    from pipeline.models.registry import build_ranker

    if id(setup) not in _RANKERS:
        _RANKERS.clear()
        ranker = build_ranker(setup.cfg, setup.seed)
        ranker.bind(*setup.texts)
        _RANKERS[id(setup)] = ranker
    return _RANKERS[id(setup)]


def _fill(setup: _Setup, batch: _Batch, _log: object) -> dict[Key, Tensor]:
    return _ranker(setup).fill(batch.keys)


def compute_features(
    cfg: ModelParams,
    seed: int,
    texts: tuple[Mapping[str, str], Mapping[str, str]],
    workers: int = 1,
    threads: int = 1,
    runner: Callable[..., list[Any]] | None = None,
) -> dict[Key, Tensor]:
    """The frozen bottom's states of every query and document of ``texts`` (in the order
    of :meth:`Ranker.warm`'s batches; empty for a family that encodes pairs or without
    ``train_layers``), computed in ``workers`` processes of ``threads`` torch threads by
    ``runner`` (the trainer's ``pipeline.train.jobs.run_jobs``, passed in by the stage: this
    layer imports no trainer); without one, in this process."""
    from pipeline.models.registry import get_family

    if not get_family(cfg.arch).per_text:
        return {}
    setup = _Setup(cfg, seed, texts)
    ranker = _ranker(setup)  # states already cached in this process are not computed again
    batches = ranker.warm_batches(list(texts[0]), list(texts[1]))
    jobs = [_Batch(i, keys) for i, keys in enumerate(batches)]
    done = (runner(_fill, setup, jobs, workers, threads) if runner is not None
            else [_fill(setup, job, None) for job in jobs])  # fmt: skip
    for states in done:
        ranker.preload(states)
    cached = ranker.features()
    computed = [k for keys in batches for k in keys]  # as Ranker.warm orders them
    return {**{k: v for k, v in cached.items() if k not in set(computed)},
            **{k: cached[k] for k in computed}}  # fmt: skip
