"""The recording view of the params (pipeline/witness.py) and the params slices
(pipeline/deps/slices.py), without running a stage (issue 42; end to end:
tests/stages/test_witness.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pipeline import witness
from pipeline.deps import slices
from pipeline.deps.plan import params_dep
from pipeline.errors import InputError
from pipeline.params import load_params

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def keys() -> Iterator[set[str]]:
    witness.reset()
    yield witness._keys
    witness.reset()


def test_the_view_records_leaves_entries_and_key_sets(keys: set[str]) -> None:
    params = witness.watch(load_params(ROOT / "params.yaml"))
    assert keys == set()
    _ = params.train.lr, params.methods["baseline"].loss, params.dataset.source
    assert {"train.lr", "methods.baseline.loss", "dataset.name"} <= keys
    assert not any(k.startswith("dataset.grep_biasir") for k in keys)  # navigation only
    _ = list(params.post), "no-such-row" in params.methods
    assert {"post.*", "methods.no-such-row"} <= keys
    dataclasses.asdict(params.model.settings)  # a config passed on: every field read
    arch = params.model.arch
    assert {f"model.{arch}.{f.name}" for f in dataclasses.fields(params.model.settings)} <= keys
    assert not any(k.startswith("model.late_interaction") for k in keys) or arch == (
        "late_interaction"
    )


def test_the_raw_tree_records_the_keys_a_profile_digest_reads(keys: set[str]) -> None:
    from pipeline import profile

    tree = witness.raw(yaml.safe_load((ROOT / "params.yaml").read_text()))
    profile.digest(tree, ("train",), profile.RUNTIME)
    assert "train.lr" in keys and not {f"train.{k}" for k in profile.RUNTIME} & keys


def _default() -> dict[str, object]:
    return slices.read(ROOT / "params.yaml")


def _changed(key: str, value: object) -> set[str]:
    raw = _default()
    before = slices.slices(raw)
    node = raw
    *path, last = key.split(".")
    for part in path:
        node = node[part]  # type: ignore[assignment,index]
    node[last] = value  # type: ignore[index]
    after = slices.slices(raw)
    return {s for s in before if before[s] != after[s]}


def test_a_worker_count_changes_no_slice() -> None:
    assert _changed("train.workers", 7) == set()
    assert all("train.workers" not in s for s in slices.slices(_default()).values())


def test_settings_not_in_use_change_no_slice() -> None:
    """A family or a source not in use: no stage reads it (the evaluate stages' `profile`
    digests only the sections in use, pipeline/profile.py)."""
    for key, value in (("model.late_interaction.dim", 3), ("dataset.msmarco_passage.n_triples", 9)):
        assert _changed(key, value) == set(), key
    assert _changed("model.bi_encoder.temperature", 0.25)  # the family in use


def test_a_method_lambda_changes_its_train_slice_and_the_report_only() -> None:
    raw = _default()
    loss = raw["methods"]["penalty_irrelevant"]["loss"]  # type: ignore[index]
    changed = _changed("methods.penalty_irrelevant.loss", [*loss, "margin"])
    assert changed == {"train@penalty_irrelevant", "report"}


def test_every_stage_but_params_depends_on_its_slice_not_on_params() -> None:
    assert params_dep("train", {"foreach": "x", "do": {"cmd": "c"}}) == [
        "data/params/train@${key}.yaml"
    ]
    assert params_dep("params", {"params": ["train"]}) == []
    with pytest.raises(InputError, match="lists `params:`"):
        params_dep("score", {"params": ["score"]})
    with pytest.raises(InputError, match="no `KEYS` entry"):
        params_dep("new_stage", {"cmd": "c"})
