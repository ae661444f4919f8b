"""params.yaml validation: every bad value stops with one error naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.params import ParamsError, get_method, load_params, parse_params

ROOT = Path(__file__).resolve().parents[2]


def _raw() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def test_shipped_params_are_valid() -> None:
    p = load_params(ROOT / "params.yaml")
    assert list(p.methods)[:2] == ["baseline", "penalty_irrelevant"]
    assert p.methods["penalty_irrelevant"].loss_params()["lambda"] == 1.0


def test_ill_typed_lambda_names_the_key() -> None:
    raw = _raw()
    raw["methods"]["penalty_irrelevant"]["lambda"] = "two"
    with pytest.raises(ParamsError, match=r"'methods\.penalty_irrelevant\.lambda': expected float"):
        parse_params(raw)


def test_ill_typed_int_names_the_key() -> None:
    raw = _raw()
    raw["train"]["batch_size"] = 2.5
    with pytest.raises(ParamsError, match=r"'train\.batch_size': expected int, got 2\.5"):
        parse_params(raw)


def test_bool_is_not_a_number() -> None:
    raw = _raw()
    raw["train"]["lr"] = True
    with pytest.raises(ParamsError, match=r"'train\.lr': expected float"):
        parse_params(raw)


def test_out_of_range() -> None:
    raw = _raw()
    raw["dataset"]["test_fraction"] = 1.5
    with pytest.raises(ParamsError, match=r"'dataset\.test_fraction': 1\.5 is out of range"):
        parse_params(raw)


def test_unknown_key_lists_known_keys() -> None:
    raw = _raw()
    raw["train"]["learning_rate"] = 0.1
    with pytest.raises(ParamsError, match=r"train\.'learning_rate' is unknown; known keys"):
        parse_params(raw)


def test_unknown_loss_lists_known() -> None:
    raw = _raw()
    raw["methods"]["baseline"]["loss"] = "nope"
    with pytest.raises(ParamsError, match=r"unknown loss 'nope'; known: \[.*'margin'"):
        parse_params(raw)


def test_unknown_ordering_lists_known() -> None:
    raw = _raw()
    raw["methods"]["baseline"]["ordering"] = "zigzag"
    with pytest.raises(ParamsError, match=r"unknown ordering 'zigzag'; known: \[.*'shuffle'"):
        parse_params(raw)


def test_unknown_method_lists_known() -> None:
    p = load_params(ROOT / "params.yaml")
    with pytest.raises(ParamsError, match=r"unknown method 'nope'; known .*'baseline'"):
        get_method(p, "nope")


def test_missing_required_method_key() -> None:
    raw = _raw()
    del raw["methods"]["baseline"]["loss"]
    with pytest.raises(ParamsError, match=r"'methods\.baseline\.loss' is required"):
        parse_params(raw)


def test_malformed_yaml_names_file(tmp_path: Path) -> None:
    f = tmp_path / "params.yaml"
    f.write_text("train: [unclosed\n")
    with pytest.raises(ParamsError, match=r"params\.yaml: malformed YAML"):
        load_params(f)


def test_seeds_give_one_folder_per_seed() -> None:
    raw = yaml.safe_load(Path("params.yaml").read_text())
    assert parse_params(raw).train.seed_runs() == [(42, "")]
    raw["train"]["seeds"] = [3, 1]
    assert parse_params(raw).train.seed_runs() == [(3, "seed-3"), (1, "seed-1")]


@pytest.mark.parametrize("seeds", [[], [1, 1]])
def test_seeds_must_be_distinct_and_not_empty(seeds: list[int]) -> None:
    raw = yaml.safe_load(Path("params.yaml").read_text())
    raw["train"]["seeds"] = seeds
    with pytest.raises(ParamsError, match=r"'train\.seeds'.*non-empty list of distinct seeds"):
        parse_params(raw)
