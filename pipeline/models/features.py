"""Frozen-bottom features on disk (``data/features.safetensors``): text key → states.

Keys ``("q", query_id)`` / ``("d", doc_id)`` are stored as ``"q\\x1f<id>"``; written
atomically (temporary file, then rename).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from safetensors.torch import load_file, save_file
from torch import Tensor

from pipeline.io import ArtifactError, atomic_path
from pipeline.models.base import Key

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
