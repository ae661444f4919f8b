"""`orderings:` and the ordering keys of `methods:` in params.yaml: loaded into each record's
Config, errors naming the key, and no torch on the way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.ordering.common import ShuffleConfig
from pipeline.ordering.curriculum import CurriculumConfig
from pipeline.ordering.lws import LwsConfig
from pipeline.params import ParamsError, parse_params

ROOT = Path(__file__).resolve().parents[2]


def _raw() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def test_shipped_orderings_load_into_their_configs() -> None:
    p = parse_params(_raw())
    assert p.orderings["curriculum"] == CurriculumConfig(
        psi="tf_abs", n_buckets=10, mu=None, sigma=1.0, seed=None, mu_units="value"
    )
    assert p.orderings["lws"] == LwsConfig(rate=0.6, top=5, by_query=True)
    assert p.orderings["biased_only"] == ShuffleConfig(by_query=True) == p.orderings["shuffle"]
    assert p.methods["curriculum_high_low"].ordering == "curriculum"
    assert p.methods["curriculum_high_low"].direction == "high_to_low"
    assert p.methods["baseline"].direction is None
    assert {m.ordering for m in p.methods.values()} <= set(p.orderings)


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        ("curriculum", "sigma", 0, r"'orderings\.curriculum\.sigma': 0 is out of range \(0, ∞\]"),
        ("curriculum", "n_buckets", 0, r"'orderings\.curriculum\.n_buckets': 0 fits none of"),
        ("curriculum", "n_buckets", "al", r"known: \['all'\]; did you mean 'all'\?"),
        ("curriculum", "psi", "tf", r"'orderings\.curriculum\.psi': unknown value 'tf'"),
        ("curriculum", "mu_units", "ranks", r"did you mean 'rank'\?"),
        ("lws", "rate", 1.5, r"'orderings\.lws\.rate': 1\.5 is out of range \[0, 1\]"),
        ("lws", "top", 2.5, r"'orderings\.lws\.top': expected int, got 2\.5"),
        ("curriculum", "sigmaa", 1.0, r"'orderings\.curriculum\.sigmaa' is unknown; known keys"),
    ],
)
def test_bad_ordering_params_name_the_key(
    section: str, key: str, value: object, message: str
) -> None:
    raw = _raw()
    raw["orderings"][section][key] = value
    with pytest.raises(ParamsError, match=message):
        parse_params(raw)


def test_n_buckets_all_is_the_no_bucket_mode() -> None:
    raw = _raw()
    raw["orderings"]["curriculum"]["n_buckets"] = "all"
    assert parse_params(raw).orderings["curriculum"].buckets() is None


def test_unknown_ordering_section_suggests_the_closest() -> None:
    raw = _raw()
    raw["orderings"]["curicullum"] = {}
    with pytest.raises(
        ParamsError, match=r"'orderings\.curicullum': unknown ordering .*did you mean 'curriculum'"
    ):
        parse_params(raw)


def test_method_ordering_needs_its_section() -> None:
    raw = _raw()
    del raw["orderings"]["shuffle"]
    with pytest.raises(ParamsError, match=r"'orderings\.shuffle' is missing: method 'baseline'"):
        parse_params(raw)


def test_direction_only_for_orderings_that_take_it() -> None:
    raw = _raw()
    raw["methods"]["baseline"]["direction"] = "low_to_high"
    with pytest.raises(
        ParamsError,
        match=r"'methods\.baseline\.direction': ordering 'shuffle' takes no direction "
        r"\(only \['curriculum'\] do\)",
    ):
        parse_params(raw)
    raw = _raw()
    raw["methods"]["curriculum_low_high"]["direction"] = "sideways"
    with pytest.raises(ParamsError, match=r"'methods\.curriculum_low_high\.direction': unknown"):
        parse_params(raw)


def test_unknown_method_ordering_suggests_the_closest() -> None:
    raw = _raw()
    raw["methods"]["baseline"]["ordering"] = "shufle"
    with pytest.raises(
        ParamsError, match=r"'methods\.baseline\.ordering': unknown ordering 'shufle'.*'shuffle'\?"
    ):
        parse_params(raw)


@pytest.mark.slow
def test_the_ordering_package_imports_no_torch() -> None:
    code = (
        "import sys, pipeline.ordering, pipeline.report.curriculum; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_method_may_override_its_orderings_params() -> None:
    """A control differs from its method by one key of the ordering (issue 21)."""
    import yaml

    from pipeline.params import ParamsError, parse_params

    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text())
    raw["methods"]["mixed"] = {"ordering": "shuffle", "loss": {"margin": {}}, "psi": "bool_abs",
                               "ordering_params": {"by_query": False}}  # fmt: skip
    raw["methods"]["flat"] = {"ordering": "curriculum", "direction": "low_to_high",
                              "loss": {"margin": {}}, "psi": "tf_abs",
                              "ordering_params": {"n_buckets": "all"}}  # fmt: skip
    params = parse_params(raw)
    assert params.ordering_config("mixed").by_query is False
    assert params.ordering_config("baseline").by_query is True
    assert params.ordering_config("flat").n_buckets == "all"
    assert params.ordering_config("flat").sigma == params.orderings["curriculum"].sigma
    raw["methods"]["mixed"]["ordering_params"] = {"by_qery": False}
    with pytest.raises(ParamsError, match=r"methods\.mixed\.ordering_params.*by_qery"):
        parse_params(raw)
    raw["methods"]["mixed"]["ordering_params"] = {"by_query": "no"}
    with pytest.raises(ParamsError, match=r"methods\.mixed\.ordering_params\.by_query"):
        parse_params(raw)


def _window(triples: Any, doc_scores: Any, cfg: Any, inp: Any) -> Any:
    """A test ordering that reads its per-method key ``window`` (module level: picklable)."""
    seen.append(dict(inp.method))
    return triples.with_row_index("position")


seen: list[dict[str, Any]] = []


@pytest.mark.parametrize("typed", [False, True])
def test_any_ordering_declares_its_own_per_method_keys(
    monkeypatch: pytest.MonkeyPatch, typed: bool
) -> None:
    """An ordering whose record declares ``method_keys=("window",)`` takes
    ``methods.<m>.window`` (typed by its ``method_config`` where it has one) and reads it in
    ``Inputs.method``; other orderings refuse the key, naming the ones that take it."""
    from dataclasses import dataclass

    from pipeline import ordering
    from pipeline.ordering.common import Ordering

    @dataclass(frozen=True)
    class WindowKeys:
        window: int | None = None

    record = Ordering("win", _window, method_keys=("window",),
                      method_config=WindowKeys if typed else None)  # fmt: skip
    monkeypatch.setitem(ordering.REGISTRY, "win", record)
    raw = _raw()
    raw["orderings"]["win"] = {}
    raw["methods"]["win"] = {"ordering": "win", "psi": "bool_abs", "window": 4,
                             "loss": {"margin": {}}}  # fmt: skip
    m = parse_params(raw).methods["win"]
    assert m.ordering_keys == {"window": 4} and m.direction is None
    assert m.settings()["window"] == 4
    import polars as pl

    from pipeline.ordering._apply import apply_ordering

    triples = pl.DataFrame({"query_id": ["q", "q"], "pos_doc_id": ["a", "b"],
                            "neg_doc_id": ["c", "d"], "fold": [0, 1]})  # fmt: skip
    seen.clear()
    apply_ordering(record, triples, pl.DataFrame(), None, psi="bool_abs", seed=0,
                   method=m.ordering_keys)  # fmt: skip
    assert seen == [{"window": 4}, {"window": 4}]  # every fold's call reads it
    raw["methods"]["baseline"]["window"] = 4
    with pytest.raises(ParamsError, match=r"'methods\.baseline\.window': ordering 'shuffle' "
                       r"takes no window \(only \['win'\] do\)"):
        parse_params(raw)  # fmt: skip
    del raw["methods"]["baseline"]["window"]
    raw["methods"]["win"]["windw"] = 4
    with pytest.raises(ParamsError, match=r"'methods\.win\.windw' is unknown.*did you mean "
                       r"'window'"):
        parse_params(raw)  # fmt: skip
    if typed:
        raw["methods"]["win"] = {**raw["methods"]["win"], "window": "wide"}
        del raw["methods"]["win"]["windw"]
        with pytest.raises(ParamsError, match=r"'methods\.win\.window': expected int"):
            parse_params(raw)
