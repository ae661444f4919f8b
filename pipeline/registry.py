"""Name checks across the plug-in registries (orderings, losses), for params validation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _registry(family: str) -> Mapping[str, Any]:
    if family == "ordering":
        from pipeline.ordering import ORDERINGS

        return ORDERINGS
    if family == "loss":
        from pipeline.train.losses import LOSSES

        return LOSSES
    raise KeyError(family)


def check_known(family: str, name: str, key: str) -> None:
    """Raise a ParamsError naming `key` if `name` is not in the `family` registry."""
    from pipeline.params import ParamsError

    known = _registry(family)
    if name not in known:
        raise ParamsError(f"params key {key!r}: unknown {family} {name!r}; known: {sorted(known)}")
