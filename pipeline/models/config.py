"""The ``model`` section of params.yaml as a typed config (no torch import: params load it).

``model.arch`` names a model family: a module ``pipeline/models/<arch>.py`` with its record
(``pipeline.models.registry``). The names are read from the file names here, so checking
``model.arch`` never imports a family (or torch).
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pipeline.config import Checked, ParamsError, Range, did_you_mean

HELPERS = frozenset({"base", "card", "config", "encoders", "features", "registry", "storage"})
"""Public modules of ``pipeline.models`` that are not model families."""


def family_names() -> list[str]:
    """Every model family (``model.arch`` value): the public modules of ``pipeline.models``
    other than the helpers, sorted."""
    modules = pkgutil.iter_modules([str(Path(__file__).parent)])
    return sorted(m.name for m in modules if not m.name.startswith("_") and m.name not in HELPERS)


@dataclass(frozen=True)
class ModelConfig(Checked):
    """The ``model`` section of params.yaml (SPEC §5.1); defaults = the default profile.

    ``arch``: the family; ``name``: the checkpoint (shipped all-MiniLM-L6-v2 or any Hugging
    Face id online); ``n_layers``: keep the first n encoder layers (``None`` = all);
    ``train_layers``: train only the top k layers on cached lower-layer states (``None`` =
    full fine-tuning); ``similarity`` (bi_encoder), ``temperature`` (bi_encoder /
    late_interaction: score = similarity / temperature), ``dim`` (late_interaction: the
    token embeddings' projection size).
    """

    arch: str = "bi_encoder"
    name: str = "all-MiniLM-L6-v2"
    n_layers: Annotated[int, Range(ge=1)] | None = None
    train_layers: Annotated[int, Range(ge=1)] | None = 1
    max_len: Annotated[int, Range(ge=8)] = 128
    q_len: Annotated[int, Range(ge=1)] = 32
    similarity: Literal["cosine", "dot"] = "cosine"
    temperature: Annotated[float, Range(gt=0)] = 0.5
    dim: Annotated[int, Range(ge=1)] = 128

    def __post_init__(self) -> None:
        super().__post_init__()
        known = family_names()
        if self.arch not in known:
            raise ParamsError(
                f"params key 'arch': unknown model family {self.arch!r}; known: {known}"
                + did_you_mean(self.arch, known)
            )
