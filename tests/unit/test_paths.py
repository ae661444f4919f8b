"""The artifact paths of `pipeline.paths` are the ones dvc.yaml declares as deps and outs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pipeline import paths

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> set[str]:
    """Every dep/out/metric/plot path of dvc.yaml (templated with `${key}`)."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    found: set[str] = set()
    for stage in stages.values():
        body: dict[str, Any] = stage.get("do", stage)
        for field in ("deps", "outs", "metrics", "plots"):
            for item in body.get(field, []):
                found |= set(item) if isinstance(item, dict) else {item}
    return found


def test_every_artifact_path_is_declared_in_dvc_yaml() -> None:
    declared = _declared()
    constants = [
        v for k, v in vars(paths).items() if k.isupper() and isinstance(v, Path) and v.suffix
    ]
    for path in constants:
        assert path.as_posix() in declared, path
    method = "${key}"
    for path in (
        paths.ordered(method),
        paths.order_profile(method),
        paths.models(method),
        paths.runs(method),
        paths.evals(method),
        paths.metrics(method),
        paths.live(method) / "metrics.json",
        paths.live(method) / "plots" / "metrics",
    ):
        assert path.as_posix() in declared, path
    assert (
        paths.LIVE.as_posix() in declared
        and paths.evals("bm25").as_posix() in declared
        and paths.runs("zero-shot").as_posix() in declared
    )
