"""Loss configs for tests: params-style keys, required keys filled with an example value
read from their annotation (so a new loss term with a new required key is covered by the
registry-wide tests at once). The papers' variant names (``penalty_relevant``,
``pointwise_reward_both``) stand for the term with its ``docs`` setting
(``penalty`` with ``docs: relevant``)."""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from torch import Tensor

from pipeline.config import ParamsError, Range, hints, key_of, required
from pipeline.train.losses import get_record, make_config
from pipeline.train.losses.regularised import FORMS, KINDS, SIDES

VARIANTS = {
    f"{prefix}{kind}_{side}": (f"{prefix}{kind}", side)
    for prefix, *_ in FORMS.values()
    for kind in KINDS
    for side in SIDES
}
"""A paper's variant name → (its loss term, its ``docs``)."""


def term(name: str, values: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """``(loss term, its settings)`` of a term or variant name with ``values``."""
    if name in VARIANTS:
        base, side = VARIANTS[name]
        return base, {"docs": side, **(values or {})}
    return name, dict(values or {})


def example(tp: Any) -> Any:
    """A value that annotation ``tp`` accepts (inside its Range, the first Literal choice)."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *meta = typing.get_args(tp)
        value = example(base)
        for r in (m for m in meta if isinstance(m, Range)):
            low = r.ge if r.ge is not None else (r.gt + 1 if r.gt is not None else None)
            if low is not None and value < low:
                value = type(value)(low)
            if r.le is not None and value > r.le:
                value = type(value)(r.le)
        return value
    if origin is Literal:
        return typing.get_args(tp)[0]
    if origin in (typing.Union, type(int | None)):
        return example(next(a for a in typing.get_args(tp) if a is not type(None)))
    return {float: 0.5, int: 1, bool: True, str: "x"}[tp]


def config(name: str, values: Mapping[str, Any] | None = None) -> Any:
    """Loss ``name``'s config from ``values``; keys that are required (by their field or by
    a rule of the config) and not given get an example value."""
    name, given = term(name, values)
    cls = get_record(name).config
    types = {key_of(k): v for k, v in hints(cls).items()}
    filled = {k: example(types[k]) for k in required(cls) if k not in given}
    for _ in types:
        try:
            return make_config(name, {**filled, **given})
        except ParamsError as e:
            wanted = re.search(r"params key '[^']*\.(\w+)' is required", str(e))
            if wanted is None or wanted[1] in filled or wanted[1] not in types:
                raise
            filled[wanted[1]] = example(types[wanted[1]])
    return make_config(name, {**filled, **given})


def loss(name: str) -> Callable[[Tensor, Tensor, Mapping[str, Tensor], Mapping[str, Any]], Tensor]:
    """Score term ``name`` (or variant) taking params-style keys, as the tests write them."""
    fn = get_record(term(name)[0]).fn
    assert fn is not None

    def call(s_pos: Tensor, s_neg: Tensor, batch: Mapping[str, Tensor], params: Any) -> Tensor:
        return fn(s_pos, s_neg, batch, config(name, params))

    return call
