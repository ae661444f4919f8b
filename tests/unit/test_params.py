"""params.yaml validation: every bad value stops with one error naming the key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline import plugins
from pipeline.config import fields
from pipeline.params import ParamsError, get_method, load_params, parse_params

ROOT = Path(__file__).resolve().parents[2]


def _raw() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def test_shipped_params_are_valid() -> None:
    p = load_params(ROOT / "params.yaml")
    assert list(p.methods)[:2] == ["baseline", "penalty_irrelevant"]
    cfg = p.methods["penalty_irrelevant"].config("penalty")
    assert (cfg.lambda_, cfg.docs) == (1.0, "irrelevant")


def test_ill_typed_lambda_names_the_key() -> None:
    raw = _raw()
    raw["methods"]["penalty_irrelevant"]["loss"]["penalty"]["lambda"] = "two"
    with pytest.raises(
        ParamsError, match=r"'methods\.penalty_irrelevant\.loss\.penalty\.lambda': expected float"
    ):
        parse_params(raw)


@pytest.mark.parametrize(
    ("method", "term", "key", "value", "message"),
    [
        ("penalty_irrelevant", "penalty", "lambda", -5, r": -5 is out of range \[0, ∞\]"),
        ("neutrality_kl", "neutrality_kl", "coef", -1, r": -1 is out of range \[0, ∞\]"),
        ("advbert", "adversary", "adv_weight", -1, r": -1 is out"),
        ("equalizeir", "poe", "alpha", -0.1, r": -0\.1 is out"),
        ("penalty_both", "penalty", "lambda_neg", -1, r": -1 is out"),
        ("penalty_relevant", "penalty", "margin", -1, r": -1 is out"),
        ("penalty_relevant", "penalty", "docs", "all",
         r": unknown value 'all'; known: \['relevant', 'irrelevant', 'both'\]"),
    ],
)  # fmt: skip
def test_signs_and_ranges_of_loss_settings_are_checked(
    method: str, term: str, key: str, value: object, message: str
) -> None:
    """A strength is ≥ 0 (the kind of term gives its sign): `coef: -1` and `lambda: -5`
    stop loading with the term's key (`methods.<m>.loss.<term>.<key>`)."""
    raw = _raw()
    raw["methods"][method]["loss"][term][key] = value
    where = re.escape(f"'methods.{method}.loss.{term}.{key}'")
    with pytest.raises(ParamsError, match=where + message):
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
    raw["methods"]["baseline"]["loss"] = {"nope": {}}
    with pytest.raises(
        ParamsError, match=r"'methods\.baseline\.loss\.nope': unknown loss 'nope'; known: "
    ):
        parse_params(raw)
    raw["methods"]["baseline"]["loss"] = {"marginn": {}}
    with pytest.raises(ParamsError, match=r"did you mean 'margin'"):
        parse_params(raw)
    raw["methods"]["baseline"]["loss"] = "margin"  # one name is not a mapping of terms
    with pytest.raises(ParamsError, match=r"'methods\.baseline\.loss': expected a mapping of loss"):
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
            r"'methods\.baseline\.lambda' is unknown; keys of a method: .*'lambda' is a setting "
            r"of the loss terms \[.*'penalty'.*\]: put it in the term's entry",
        ),
        (
            "penalty_both",
            {"penalty.lambda": None},
            r"'methods\.penalty_both\.loss\.penalty\.lambda' is required \(or both "
            r"'lambda_pos' and "
            r"'lambda_neg'.*add `lambda: <value>`",
        ),
        (
            "penalty_relevant",
            {"penalty.lambda": None},
            r"'methods\.penalty_relevant\.loss\.penalty\.lambda' is required; "
            r"add `lambda: <value>`",
        ),
        (
            "neutrality_kl",
            {"neutrality_kl.coef": None},
            r"'methods\.neutrality_kl\.loss\.neutrality_kl\.coef' is required by loss "
            r"'neutrality_kl' but "
            r"missing; add `coef: <value>`",
        ),
        (
            "equalizeir",
            {"poe.weak_strategy": None},
            r"'methods\.equalizeir\.loss\.poe\.weak_strategy' is required by loss 'poe'",
        ),
        (
            "penalty_relevant",
            {"penalty.lambda_neg": 1.0},
            r"'methods\.penalty_relevant\.loss\.penalty\.lambda_neg': a per-side λ needs "
            r"`docs: both`",
        ),
        (
            "advbert",
            {"adversary.coef": 1.0},
            r"'methods\.advbert\.loss\.adversary\.coef' is unknown; known keys of "
            r"'methods\.advbert\.loss\.adversary': \['adv_weight'\]",
        ),
    ],
)
def test_a_loss_key_that_is_wrong_for_the_loss_is_refused_at_load(
    method: str, change: dict[str, Any], message: str
) -> None:
    """Each loss term's settings are its own Config's fields, in its entry of the list: an
    extra key, a missing required one, a key of another term or a key written beside the
    terms stops loading, naming the key and the fix. (`"<term>.<key>"`: a term's key.)"""
    raw = _raw()
    entry = raw["methods"][method]
    for k, v in change.items():
        term, _, key = k.rpartition(".")
        where = entry["loss"][term] if term else entry
        if v is None:
            del where[key]
        else:
            where[key] = v
    with pytest.raises(ParamsError, match=message):
        parse_params(raw)


def test_both_sides_lambda_may_be_given_per_side() -> None:
    raw = _raw()
    term = raw["methods"]["penalty_both"]["loss"]["penalty"]
    del term["lambda"]
    term |= {"lambda_pos": 0.5, "lambda_neg": 2.0}
    cfg = parse_params(raw).methods["penalty_both"].config("penalty")
    assert (cfg.lambda_, cfg.lambda_pos, cfg.lambda_neg) == (None, 0.5, 2.0)


def test_a_method_loss_maps_each_term_to_its_config_in_params_order() -> None:
    m = load_params(ROOT / "params.yaml").methods["neutrality_kl"]
    assert m.loss == ("margin", "neutrality_kl")
    assert [name for name, _ in m.terms] == ["margin", "neutrality_kl"]
    assert m.config("neutrality_kl").coef == 1.0 and m.config("margin").margin == 1.0
    raw = _raw()
    raw["methods"]["neutrality_kl"]["loss"] = {"neutrality_kl": {"coef": 1.0}, "margin": None}
    assert parse_params(raw).methods["neutrality_kl"].loss == ("neutrality_kl", "margin")
    raw["methods"]["baseline"]["loss"] = ["margin", {"name": "penalty", "docs": "both",
                                                     "lambda": 1.0}]  # fmt: skip
    with pytest.raises(ParamsError, match=r"'methods\.baseline\.loss': loss terms are a "
                       r"mapping keyed by term name, not a list; write `loss: \{margin: \{\}, "
                       r"penalty: \{docs: both, lambda: 1\.0\}\}`"):
        parse_params(raw)  # fmt: skip
    raw["methods"]["baseline"]["loss"] = {"margin": 0.5}
    with pytest.raises(ParamsError, match=r"'methods\.baseline\.loss\.margin': expected the "
                       r"term's settings as a mapping"):
        parse_params(raw)  # fmt: skip


def test_two_terms_of_a_method_do_not_share_a_setting() -> None:
    """`penalty` on relevant and `reward` on irrelevant documents, each with its own λ."""
    raw = _raw()
    raw["methods"]["baseline"]["loss"] = {
        "penalty": {"docs": "relevant", "lambda": 0.5},
        "reward": {"docs": "irrelevant", "lambda": 2.0},
    }
    m = parse_params(raw).methods["baseline"]
    assert (m.config("penalty").lambda_, m.config("reward").lambda_) == (0.5, 2.0)
    assert m.settings()["loss"] == {
        "penalty": {"docs": "relevant", "lambda": 0.5, "margin": 1.0},
        "reward": {"docs": "irrelevant", "lambda": 2.0, "margin": 1.0},
    }


def test_each_model_family_and_metric_family_owns_its_settings() -> None:
    """`model.<arch>` and `evaluate.<family>` are loaded into the records' own configs; a
    family's key at the shared level names where it belongs."""
    p = load_params(ROOT / "params.yaml")
    assert p.model.settings == p.model.families[p.model.arch]
    assert p.model.families["late_interaction"].dim == 128
    assert not hasattr(p.model.families["bi_encoder"], "dim")
    assert p.evaluate.settings("awrf").target == "uniform"
    assert p.evaluate.settings("exposure").temperature == 1.0
    raw = _raw()
    raw["model"]["temperature"] = 0.5
    owners = sorted(n for n, r in plugins.records("model family").items()
                    if "temperature" in fields(r.config))  # every family that has the key
    with pytest.raises(ParamsError, match=r"'model\.temperature' is unknown.*a setting of "
                       + re.escape(f"{owners}: put it under `model.<name>`")):
        parse_params(raw)  # fmt: skip
    raw = _raw()
    raw["model"]["bi_encoder"]["dim"] = 64
    with pytest.raises(ParamsError, match=r"'model\.bi_encoder\.dim' is unknown"):
        parse_params(raw)
    raw = _raw()
    raw["evaluate"]["exposure"]["temperature"] = 0
    with pytest.raises(ParamsError, match=r"'evaluate\.exposure\.temperature': 0 is out of"):
        parse_params(raw)
    raw = _raw()
    raw["model"]["arch"] = "bi-encoder"
    with pytest.raises(ParamsError, match=r"'model\.arch': unknown model\.arch 'bi-encoder'"):
        parse_params(raw)


def test_the_transfer_collection_is_a_source_without_training_data() -> None:
    p = load_params(ROOT / "params.yaml")
    assert p.dataset.config_of(p.transfer.name).splits == ["test"]
    raw = _raw()
    raw["dataset"]["name"] = "genderbias-qa"
    with pytest.raises(ParamsError, match=r"'dataset\.name': source 'genderbias-qa' has no "
                       r"training data"):
        parse_params(raw)  # fmt: skip
    raw = _raw()
    raw["transfer"]["name"] = "genderbias"
    with pytest.raises(ParamsError, match=r"'transfer\.name': unknown dataset 'genderbias'"):
        parse_params(raw)


def test_dvc_written_values_load_as_the_declared_type(tmp_path: Path) -> None:
    """`dvc exp run -S` writes `query_set=215` as an int and `lr=3e-6` as `3e-06` (a string
    to YAML 1.1): both load as the type the key declares."""
    text = (ROOT / "params.yaml").read_text()
    text = text.replace("query_set: '215'", "query_set: 1765").replace("lr: 1.0e-4", "lr: 3e-06")
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
    from pipeline.metrics import METRICS
    from pipeline.models import MODELS
    from pipeline.ordering import ORDERINGS
    from pipeline.params import SECTIONS, DatasetParams

    raw = _raw()
    sections = {name: (cls, raw[name]) for name, cls in SECTIONS.items()}
    for r in SOURCES.values():
        sections[f"dataset.{r.section}"] = (r.config, raw["dataset"][r.section])
    for name, r in ORDERINGS.items():
        sections[f"orderings.{name}"] = (r.config, raw["orderings"][name])
    for name, family in MODELS.items():
        sections[f"model.{name}"] = (family.config, raw["model"][name])
    for name, metric in METRICS.items():
        if fields(metric.config):
            sections[f"evaluate.{name}"] = (metric.config, raw["evaluate"][name])
    assert raw["dataset"]["name"] == DatasetParams.name
    for where, (cls, section) in sections.items():
        assert sorted(section) == sorted(fields(cls)), where
        for key, default in defaults(cls).items():
            value = section[key]
            value = type(default)(value) if isinstance(default, tuple) else value
            assert value == default, f"{where}.{key}: params.yaml {value!r}, config {default!r}"


def test_controls_are_pairs_of_known_methods() -> None:
    """`controls:` (issue 29): each control names the methods it controls; the six of the
    default, every name a method, none its own control."""
    p = load_params(ROOT / "params.yaml")
    assert len(p.controls) == 6
    assert p.controls["neutral_only_size"].of == ["neutral_only"]
    raw = _raw()
    raw["controls"]["advbert_w10"]["of"] = ["advbrt"]
    with pytest.raises(ParamsError, match=r"'controls\.advbert_w10': 'advbrt' is not a method.*"
                       r"did you mean 'advbert'"):  # fmt: skip
        parse_params(raw)
    raw["controls"]["advbert_w10"]["of"] = ["advbert_w10"]
    with pytest.raises(ParamsError, match=r"'controls\.advbert_w10\.of'.*not itself"):
        parse_params(raw)
    raw["controls"]["advbert_w10"] = {"off": ["advbert"]}
    with pytest.raises(ParamsError, match=r"'controls\.advbert_w10\.off' is unknown"):
        parse_params(raw)
    del raw["controls"]
    assert parse_params(raw).controls == {}


def test_dvc_set_addresses_each_term_setting_by_name(tmp_path: Path) -> None:
    """`dvc exp run -S methods.<m>.loss.<term>.<key>=…` (DVC's own override code, which
    rewrites params.yaml) sets one term's setting: the loader reads it, the other terms and
    their order are unchanged, and every term's setting is one flat key (a column of `dvc
    exp show`)."""
    from dvc.utils.hydra import apply_overrides

    path = tmp_path / "params.yaml"
    path.write_text((ROOT / "params.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    before = load_params(path)
    apply_overrides(str(path), ["methods.penalty_irrelevant.loss.penalty.lambda=0.5",
                                "methods.neutrality_kl.loss.neutrality_kl.coef=2"])  # fmt: skip
    after = load_params(path)
    assert after.methods["penalty_irrelevant"].config("penalty").lambda_ == 0.5
    assert after.methods["neutrality_kl"].loss == ("margin", "neutrality_kl")
    assert after.methods["neutrality_kl"].config("neutrality_kl").coef == 2.0
    changed = [m for m in before.methods if before.methods[m] != after.methods[m]]
    assert changed == ["penalty_irrelevant", "neutrality_kl"]
    assert "# One entry per method" in path.read_text(encoding="utf-8")  # comments kept
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert raw["methods"]["penalty_irrelevant"]["loss"] == {"penalty": {"docs": "irrelevant",
                                                                        "lambda": 0.5}}  # fmt: skip
    with pytest.raises(Exception, match=r"Invalid `--set-param`"):  # DVC refuses a new key
        apply_overrides(str(path), ["methods.penalty_irrelevant.loss.penalty.lamda=0.5"])
    apply_overrides(str(path), ["+methods.penalty_irrelevant.loss.penalty.lamda=0.5"])  # adds it
    with pytest.raises(ParamsError, match=r"'methods\.penalty_irrelevant\.loss\.penalty\.lamda' "
                       r"is unknown.*did you mean 'lambda'"):
        load_params(path)  # fmt: skip
