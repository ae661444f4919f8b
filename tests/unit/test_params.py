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
    assert p.methods["penalty_irrelevant"].config("penalty_irrelevant").lambda_ == 1.0


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
    raw["dataset"]["grep_biasir"]["test_fraction"] = 1.5
    with pytest.raises(
        ParamsError, match=r"'dataset\.grep_biasir\.test_fraction': 1\.5 is out of range"
    ):
        parse_params(raw)


def test_unknown_key_lists_known_keys() -> None:
    raw = _raw()
    raw["train"]["batchsize"] = 4
    with pytest.raises(
        ParamsError, match=r"'train\.batchsize' is unknown; known keys.*did you mean 'batch_size'"
    ):
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
    assert parse_params(raw).train.seed_runs() == [(s, f"seed-{s}") for s in (1, 2, 3)]
    raw["train"]["seeds"] = None
    assert parse_params(raw).train.seed_runs() == [(42, "")]
    raw["train"]["seeds"] = [3, 1]
    assert parse_params(raw).train.seed_runs() == [(3, "seed-3"), (1, "seed-1")]


@pytest.mark.parametrize("seeds", [[], [1, 1]])
def test_seeds_must_be_distinct_and_not_empty(seeds: list[int]) -> None:
    raw = yaml.safe_load(Path("params.yaml").read_text())
    raw["train"]["seeds"] = seeds
    with pytest.raises(ParamsError, match=r"'train\.seeds'.*non-empty list of distinct seeds"):
        parse_params(raw)


def test_an_unknown_section_is_refused_with_the_closest_name() -> None:
    raw = _raw()
    raw["bogus"] = {"x": 1}
    with pytest.raises(ParamsError, match=r"'bogus' is unknown; known sections"):
        parse_params(raw)
    raw = _raw()
    raw["trian"] = raw.pop("train")
    with pytest.raises(ParamsError, match=r"'trian' is unknown.*did you mean 'train'\?"):
        parse_params(raw)


@pytest.mark.parametrize(
    ("method", "change", "message"),
    [
        (
            "baseline",
            {"lambda": 2},
            r"'methods\.baseline\.lambda' is unknown: its loss \['margin'\] takes no 'lambda' "
            r"\(a key of \[.*'penalty_both'.*\]\).*Remove it",
        ),
        (
            "penalty_both",
            {"lambda": None},
            r"'methods\.penalty_both\.lambda' is required \(or both 'lambda_pos' and "
            r"'lambda_neg'.*add `lambda: <value>`",
        ),
        (
            "penalty_relevant",
            {"lambda": None},
            r"'methods\.penalty_relevant\.lambda' is required by loss 'penalty_relevant' but "
            r"missing; add `lambda: <value>` under 'methods\.penalty_relevant'",
        ),
        (
            "neutrality_kl",
            {"coef": None},
            r"'methods\.neutrality_kl\.coef' is required by loss 'neutrality_kl' but missing; "
            r"add `coef: <value>`",
        ),
        (
            "equalizeir",
            {"weak_strategy": None},
            r"'methods\.equalizeir\.weak_strategy' is required by loss 'poe'",
        ),
        (
            "penalty_relevant",
            {"lambda_neg": 1.0},
            r"'methods\.penalty_relevant\.lambda_neg' is unknown.*\(a key of \[.*'penalty_both'",
        ),
        (
            "advbert",
            {"coef": 1.0},
            r"'methods\.advbert\.coef' is unknown: its loss \['margin', 'adversary'\]",
        ),
    ],
)
def test_a_loss_key_that_is_wrong_for_the_loss_is_refused_at_load(
    method: str, change: dict[str, Any], message: str
) -> None:
    """A method's keys are its loss terms' Config fields: an extra key, a missing required
    one or a key of another loss stops loading, naming the key and the fix."""
    raw = _raw()
    for k, v in change.items():
        if v is None:
            del raw["methods"][method][k]
        else:
            raw["methods"][method][k] = v
    with pytest.raises(ParamsError, match=message):
        parse_params(raw)


def test_both_sides_lambda_may_be_given_per_side() -> None:
    raw = _raw()
    entry = raw["methods"]["penalty_both"]
    del entry["lambda"]
    entry |= {"lambda_pos": 0.5, "lambda_neg": 2.0}
    cfg = parse_params(raw).methods["penalty_both"].config("penalty_both")
    assert (cfg.lambda_, cfg.lambda_pos, cfg.lambda_neg) == (None, 0.5, 2.0)


def test_a_method_loss_is_a_list_of_terms_each_with_its_config() -> None:
    m = load_params(ROOT / "params.yaml").methods["neutrality_kl"]
    assert m.loss == ("margin", "neutrality_kl")
    assert [name for name, _ in m.terms] == ["margin", "neutrality_kl"]
    assert m.config("neutrality_kl").coef == 1.0 and m.config("margin").margin == 1.0
    raw = _raw()
    raw["methods"]["baseline"]["loss"] = ["margin", "margin"]
    with pytest.raises(ParamsError, match=r"'methods\.baseline\.loss'.*names a loss twice"):
        parse_params(raw)


def test_dvc_written_values_load_as_the_declared_type(tmp_path: Path) -> None:
    """`dvc exp run -S` writes `query_set=215` as an int and `lr=3e-6` as `3e-06` (a string
    to YAML 1.1): both load as the type the key declares."""
    text = (ROOT / "params.yaml").read_text()
    text = text.replace('query_set: "215"', "query_set: 1765").replace("lr: 1.0e-4", "lr: 3e-06")
    assert "query_set: 1765" in text and "lr: 3e-06" in text
    assert yaml.safe_load(text)["train"]["lr"] == "3e-06"  # what YAML 1.1 reads
    (tmp_path / "params.yaml").write_text(text)
    p = load_params(tmp_path / "params.yaml")
    assert p.train.lr == 3e-6
    assert p.dataset.sources["msmarco_passage"].query_set == "1765"
    raw = _raw()
    raw["train"]["lr"] = "fast"
    with pytest.raises(ParamsError, match=r"'train\.lr': expected float, got 'fast'"):
        parse_params(raw)


def test_a_source_key_at_the_dataset_level_points_to_its_section() -> None:
    raw = _raw()
    raw["dataset"]["folds"] = 1
    with pytest.raises(
        ParamsError, match=r"'dataset\.folds' is unknown.*a key of a source's own section"
    ):
        parse_params(raw)
    raw = _raw()
    raw["dataset"]["name"] = "msmarco"
    with pytest.raises(ParamsError, match=r"'dataset\.name': unknown dataset 'msmarco'.*did you"):
        parse_params(raw)


def test_params_yaml_lists_every_key_with_its_config_default() -> None:
    """Defaults live in the configs; params.yaml repeats every one of them (so `dvc exp run
    -S key=value` needs no `+`), with the same value."""
    from pipeline.config import defaults, fields
    from pipeline.data import SOURCES
    from pipeline.ordering import ORDERINGS
    from pipeline.params import SECTIONS, DatasetParams

    raw = _raw()
    sections = {name: (cls, raw[name]) for name, cls in SECTIONS.items()}
    for r in SOURCES.values():
        sections[f"dataset.{r.section}"] = (r.config, raw["dataset"][r.section])
    for name, r in ORDERINGS.items():
        sections[f"orderings.{name}"] = (r.config, raw["orderings"][name])
    assert raw["dataset"]["name"] == DatasetParams.name
    for where, (cls, section) in sections.items():
        assert sorted(section) == sorted(fields(cls)), where
        for key, default in defaults(cls).items():
            value = section[key]
            value = type(default)(value) if isinstance(default, tuple) else value
            assert value == default, f"{where}.{key}: params.yaml {value!r}, config {default!r}"
