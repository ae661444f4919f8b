"""Profile-marked metrics (pipeline/profile.py): every metrics file records digests of the
params it comes from, and `python -m pipeline.profile` marks the files a targeted experiment
left from another profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline import profile

ROOT = Path(__file__).resolve().parents[2]


def _tree() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def test_digests_follow_what_the_numbers_depend_on() -> None:
    tree = _tree()
    before = profile.profile(tree, model=True, train=True)
    assert set(before) == {"data", "model", "train"} and all(len(v) == 12 for v in before.values())
    tree["train"]["workers"] = 7  # how training runs, not what it computes
    tree["methods"]["baseline"]["psi"] = "tf_abs"  # a method entry: not the profile
    assert profile.profile(tree, model=True, train=True) == before
    tree["train"]["max_steps"] = 10
    after = profile.profile(tree, model=True, train=True)
    assert after["train"] != before["train"] and after["data"] == before["data"]
    tree["dataset"]["grep_biasir"]["max_queries"] = 40
    assert profile.profile(tree, model=False, train=False)["data"] != before["data"]
    assert profile.profile(tree, model=False, train=False).keys() == {"data"}


def test_listing_marks_the_files_of_another_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = _tree()
    tree["methods"] = {m: tree["methods"][m] for m in ("baseline", "penalty_relevant")}
    tree["post"] = {}  # no inference-time rows here
    (tmp_path / "metrics").mkdir()
    old = dict(tree, train=dict(tree["train"], max_steps=None))
    new = dict(tree, train=dict(tree["train"], max_steps=10))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(new))
    for name, model, train, params in (
        ("bm25", False, False, new), ("zero-shot", True, False, new),
        ("baseline", True, True, new), ("penalty_relevant", True, True, old),
    ):  # fmt: skip
        parts = profile.profile(params, model, train)  # as stages.evaluate writes them:
        full = tmp_path / "eval" / name / "metrics.json"  # every key, the parts
        full.parent.mkdir(parents=True)
        full.write_text(json.dumps({"MRR@10": 0.5, "profile": parts}))
        head = {"MRR@10": 0.5, "profile": profile.compact(parts)}  # the DVC metrics file
        (tmp_path / "metrics" / f"{name}.json").write_text(json.dumps(head))
    assert profile.main(["--repo", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "current  metrics/bm25.json",
        "current  metrics/zero-shot.json",
        "current  metrics/baseline.json",
        "stale    metrics/penalty_relevant.json  (profile.train: not params.yaml's)",
        "1 of 4 metrics files do not come from params.yaml; `dvc repro` updates them",
    ]
    (tmp_path / "eval/penalty_relevant/metrics.json").unlink()  # the headline alone
    assert profile.main(["--repo", str(tmp_path)]) == 1
    assert ("stale    metrics/penalty_relevant.json  (profile: not params.yaml's)"
            in capsys.readouterr().out)  # fmt: skip
    (tmp_path / "metrics/penalty_relevant.json").unlink()
    assert profile.main(["--repo", str(tmp_path)]) == 1
    assert "missing  metrics/penalty_relevant.json" in capsys.readouterr().out


def test_compact_profile_is_one_short_string_that_changes_with_any_part() -> None:
    a = {"data": "674b5cf101ab", "model": "bedc752c4eff"}
    assert len(profile.compact(a)) == 12 and profile.compact(a) == profile.compact(dict(a))
    assert profile.compact(a) != profile.compact(a | {"model": "bedc752c4efe"})
    assert profile.compact(a) != profile.compact(a | {"train": "60f3cf82f81a"})
