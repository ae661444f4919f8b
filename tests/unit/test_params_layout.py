"""params.yaml survives `dvc exp run -S` (issue 41: DVC rewrote it, re-indenting lists,
re-quoting strings and wrapping long lines, so that one `-S` showed as a 97-line diff): the
committed file is written in the layout DVC's own YAML writer produces, with every comment,
so that DVC's rewrite changes exactly the line of the value it sets. The writer is DVC's
(`dvc.utils.serialize.modify_yaml`, what `dvc exp run -S` calls), not ours."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

from dvc.utils.serialize import modify_yaml

ROOT = Path(__file__).resolve().parents[2]


def test_dvc_rewrites_params_yaml_to_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", path)
    with modify_yaml(str(path)):
        pass  # DVC reads and writes it back, as `-S` does
    before = (ROOT / "params.yaml").read_text(encoding="utf-8")
    after = path.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), n=0))
    assert after == before, (
        "params.yaml is not in DVC's layout; rewrite it with `python -c \"from "
        "dvc.utils.serialize import modify_yaml; modify_yaml('params.yaml').__enter__()\"`-"
        "like round trip:\n" + diff
    )


def test_one_set_param_changes_one_line(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", path)
    with modify_yaml(str(path)) as data:
        data["post"]["shift_01"]["lambda"] = 0.2  # the README's first experiment
    before = (ROOT / "params.yaml").read_text(encoding="utf-8").splitlines()
    after = path.read_text(encoding="utf-8").splitlines()
    changed = [line for line in difflib.unified_diff(before, after, n=0, lineterm="")
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]  # fmt: skip
    assert len(changed) == 2 and changed[1][1:].strip().startswith("lambda: 0.2"), changed
    assert sum("#" in line for line in after) == sum("#" in line for line in before)
