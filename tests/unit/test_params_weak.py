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


def _with_weak_loss(value: Any) -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["methods"]["equalizeir"]["loss"]["poe"]["weak_loss"] = value
    return raw


def test_the_weak_loss_is_a_typed_term_with_its_own_settings() -> None:
    """``weak_loss``: a term's name (its defaults) or one term mapped to its settings, loaded
    into the term's Config when params load (as ``weak_scores`` trains f_B with it)."""
    poe = parse_params(_with_weak_loss("margin")).methods["equalizeir"].config("poe")
    assert poe.weak_term()[0] == "margin" and poe.weak_term()[1].margin == 1.0
    raw = _with_weak_loss({"penalty": {"docs": "both", "lambda": 0.5}})
    name, cfg = parse_params(raw).methods["equalizeir"].config("poe").weak_term()
    assert (name, cfg.docs, cfg.lambda_) == ("penalty", "both", 0.5)
    default = parse_params(yaml.safe_load((ROOT / "params.yaml").read_text()))
    assert default.methods["equalizeir"].config("poe").weak_term()[0] == "margin"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("penalty", rf"'{POE}\.weak_loss\.penalty\.(docs|lambda)' is required"),
        ({"penalty": {"docs": "both", "lamda": 1}}, rf"'{POE}\.weak_loss\.penalty\.lamda' is "
         r"unknown.*did you mean 'lambda'"),
        ({"penalty": {"docs": "both", "lambda": -1}}, rf"'{POE}\.weak_loss\.penalty\.lambda': "
         r"-1 is out of range"),
        ("margn", rf"'{POE}\.weak_loss': unknown loss 'margn'.*did you mean 'margin'"),
        ("adversary", rf"'{POE}\.weak_loss': 'adversary' is not a term the weak learner trains "
         r"with .*it is trainable"),
        ("poe", rf"'{POE}\.weak_loss': 'poe' is not a term.*prepares its own inputs"),
        ({"margin": {}, "reward": {}}, rf"'{POE}\.weak_loss': expected one loss term"),
    ],
)  # fmt: skip
def test_an_unsupported_weak_loss_is_refused_when_params_load(value: Any, message: str) -> None:
    """Refused at load, naming the key (it was a TypeError inside train, after extract, score
    and order had run)."""
    with pytest.raises(ParamsError, match=message):
        parse_params(_with_weak_loss(value))


def test_the_weak_loss_term_is_a_code_dep_of_the_method() -> None:
    """``pipeline.deps`` finds a loss named by a mapping field (``weak_loss: {penalty:
    …}``) as it finds one named by a string: its file is in the method's code digest."""
    from pipeline.deps.records import referenced_losses
    from pipeline.train.losses import LOSSES

    raw = _with_weak_loss({"penalty": {"docs": "both", "lambda": 0.5}})
    terms = parse_params(raw).methods["equalizeir"].terms
    assert referenced_losses(terms, dict.fromkeys(LOSSES, "")) == ["penalty"]
    default = parse_params(_with_weak_loss("margin")).methods["equalizeir"].terms
    assert referenced_losses(default, dict.fromkeys(LOSSES, "")) == ["margin"]
