"""Every `dvc exp run -S key=value` of docs/paper-scale.md addresses a key params.yaml already
has (no `+` needed), through DVC's own override code (hydra's grammar), and the result loads:
DVC's rewrites (`3e-6` as `3e-06`, `215` as an int) come back as the declared types."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from dvc.utils.hydra import apply_overrides

from pipeline.params import load_params

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "paper-scale.md"


def _commands() -> list[list[str]]:
    """The `-S` values of each `dvc exp run` command in the doc's code blocks."""
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(), flags=re.S)
    out = []
    for block in blocks:
        for command in block.replace("\\\n", " ").splitlines():
            if not command.lstrip().startswith("dvc exp run"):  # other commands' prose words
                continue
            words = shlex.split(command, comments=True)
            if words[:3] == ["dvc", "exp", "run"]:
                out.append([words[i + 1] for i, w in enumerate(words) if w == "-S"])
    return out


def test_the_doc_has_commands() -> None:
    assert len(_commands()) >= 3 and all(_commands())


@pytest.mark.parametrize("overrides", _commands(), ids=lambda o: o[0])
def test_each_documented_override_set_applies_without_plus_and_loads(
    overrides: list[str], tmp_path: Path
) -> None:
    params = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", params)
    apply_overrides(params, overrides)  # raises on a key params.yaml lacks (it wants `+`)
    loaded = load_params(params)
    text = params.read_text()
    for override in overrides:
        key, _, value = override.partition("=")
        node: object = loaded
        for part in key.split("."):
            node = (
                node.sources[part] if part in getattr(node, "sources", {}) else getattr(node, part)
            )
        if value.startswith("["):
            items = [str(v) for v in node]  # type: ignore[attr-defined]
            assert items == value.strip("[]").split(","), key
        elif value == "null":
            assert node is None, key
        else:
            assert str(node) == value or node == type(node)(value), (key, node, value)
    assert "+" not in "".join(overrides) and text
