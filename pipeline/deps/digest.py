"""The code digests: one small file per stage module (per method for the per-method stages)
listing the files its import closure holds, each with its MD5, written by the `params` stage.

Every other stage depends on its own digest (``data/code/train@baseline.txt``), not on the
files themselves: DVC records one entry per stage instead of ~50, so dvc.lock is a third of
the size, and DVC rewrites dvc.lock after every stage it runs (issue 34: that rewrite cost
~2 s a stage on the tiny profile and ~7 s on the default). The digest holds exactly the files
the stage ran (`pipeline.deps.plan.Planner`), so an edit reruns the `params` stage (which
depends on all of ``pipeline/`` and ``stages/``) and then exactly the stages whose digest
changed. The digests are named by the stage module, not by dvc.yaml's stage names (DVC does
not let a stage depend on dvc.yaml): ``evaluate.txt`` serves ``evaluate@<m>``,
``evaluate_first_stage`` and ``evaluate_zero_shot``; ``order@<m>.txt`` and ``train@<m>.txt``
hold the method's own ordering and loss terms. ``model.arch`` and ``dataset.name`` are read
from params.yaml as the run has them (a ``dvc exp run -S model.arch=…`` included).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from pipeline import paths
from pipeline.deps.plan import code_files
from pipeline.deps.slices import sync
from pipeline.params import Params


def _files(root: Path, listed: list[str]) -> Iterator[Path]:
    for rel in listed:
        path = root / rel
        if path.is_dir():  # a resource folder
            yield from (p for p in sorted(path.rglob("*")) if p.is_file()
                        and "__pycache__" not in p.parts)  # fmt: skip
        else:
            yield path


def _text(root: Path, listed: list[str]) -> str:
    files = sorted({p.relative_to(root).as_posix() for p in _files(root, listed)})
    return "".join(f"{hashlib.md5((root / f).read_bytes()).hexdigest()}  {f}\n" for f in files)


def digests(root: Path, params: Params) -> dict[str, str]:
    """``{digest name: its text}`` for every stage module of ``root/stages``."""
    return {name: _text(root, files) for name, files in code_files(root, params).items()}


def write(root: Path, params: Params) -> int:
    """Write ``data/code/<name>.txt`` for every digest (`slices.sync`: a file whose text is
    unchanged is not touched; one no stage module has any more is removed); how many changed."""
    wanted = {f"{name}.txt": text for name, text in digests(root, params).items()}
    return sync(root / paths.CODE, wanted)
