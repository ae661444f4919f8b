"""EqualizeIR's ``weaker_model`` weak learner must be strictly smaller than the ranker
(issue 14 item 3, SPEC §6.3): a configuration where it is not stops with a ParamsError
naming the keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.params import ParamsError, parse_params

ROOT = Path(__file__).resolve().parents[2]
POE = r"methods\.equalizeir\.loss\.poe"
"""The params key of the method's poe term."""


def _raw(weak_layers: int | None, n_layers: int | None, **model: Any) -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((ROOT / "params.yaml").read_text())
    method = raw["methods"]["equalizeir"]["loss"]["poe"]  # its poe term
    method["weak_strategy"] = "weaker_model"
    method["weak_layers"] = weak_layers
    raw["model"] |= {"n_layers": n_layers, "train_layers": None, **model}
    return raw


@pytest.mark.parametrize("weak_layers", [2, 3])
def test_weak_learner_as_large_as_the_ranker_names_both_keys(weak_layers: int) -> None:
    with pytest.raises(
        ParamsError,
        match=rf"'{POE}\.weak_layers' \({weak_layers}\) and 'model\.n_layers' "
        r"\(2\).*strictly fewer layers",
    ):
        parse_params(_raw(weak_layers, n_layers=2))


def test_all_layers_of_the_checkpoint_count_when_n_layers_is_null() -> None:
    with pytest.raises(
        ParamsError, match=rf"'{POE}\.weak_layers' \(6\) and 'model\.n_layers' \(6"
    ):
        parse_params(_raw(6, n_layers=None, name="all-MiniLM-L6-v2"))
    with pytest.raises(ParamsError, match=r"weak_layers' \(2\) and 'model\.n_layers' \(2"):
        parse_params(_raw(2, n_layers=None, name="tiny-random-bert"))


def test_strictly_smaller_weak_learner_is_accepted() -> None:
    params = parse_params(_raw(1, n_layers=2))
    assert params.methods["equalizeir"].config("poe").weak_layers == 1
    other = parse_params(_raw(5, n_layers=None)).methods["equalizeir"]
    assert other.config("poe").weak_layers == 5


def test_weak_layers_is_required_by_weaker_model() -> None:
    with pytest.raises(ParamsError, match=rf"'{POE}\.weak_layers' is required"):
        parse_params(_raw(None, n_layers=2))


def test_weak_learner_must_hold_the_trained_layers() -> None:
    with pytest.raises(
        ParamsError,
        match=rf"'{POE}\.weak_layers' \(1\) and 'model\.train_layers' \(2\)",
    ):
        parse_params(_raw(1, n_layers=4, train_layers=2))
