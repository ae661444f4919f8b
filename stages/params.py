"""Stage `params`: params.yaml validated before any other stage runs (issue 32).

DVC deletes a stage's outputs (the git-tracked, uncached DVCLive files too) just before it
runs the stage's command, so a parameter refused inside that command has already cost the
previous outputs. Every other stage depends on this stage's output (`data/params.ok`), so
DVC runs this one first: a refused `dvc exp run -S train.lr=-0.001`, or an unknown section
(`-S +trian.lr=0.1`), stops here with one line and every output stays as it was (`persist`
in dvc.yaml: not even this stage's own output is deleted first). The output never depends on
the values: a valid change rewrites the same bytes, so DVC reruns only the stages that read
the changed key.

It also writes the code digests (`pipeline.deps.digest`): this stage depends on all of
`pipeline/` and `stages/`, every other stage on its own digest, so a code edit reruns this
stage and then exactly the stages whose code it changed. And the params slices (issue 42,
`pipeline.deps.slices`): every other stage depends on its own, `data/params/<stage>.yaml`
(the keys it reads), this one on params.yaml (its sections listed as `params:` for `dvc
params diff`), so a change reruns only the stages that read the changed key.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from pipeline import io, paths
from pipeline.deps import digest, slices
from pipeline.params import ParamsError
from stages.common import run_stage, setup

log = logging.getLogger("stages.params")

VALID = (
    "params.yaml passed `python -m stages.params`. Every stage depends on this file, so no\n"
    "stage runs (and DVC removes no outputs) before params.yaml is valid. Its bytes never\n"
    "change with the values: a valid change reruns only the stages that read it.\n"
)


AFTER = (
    "No stage ran and no output was touched. DVC leaves a value given with `dvc exp run -S` "
    "in params.yaml: fix it there (`git diff params.yaml` shows what changed)"
)


def main(argv: Sequence[str] | None = None) -> None:
    try:
        ns = setup(__doc__ or "", argv)  # loads and validates params.yaml (pipeline.params)
    except ParamsError as e:
        sep = " " if str(e).endswith(("?", ".")) else ". "
        raise ParamsError(f"{e}{sep}{AFTER}") from e
    changed = digest.write(Path.cwd(), ns.params)
    keys = slices.write(Path.cwd(), slices.read(Path("params.yaml")))
    io.write_text(VALID, paths.PARAMS_OK)
    log.info("params: valid (%d methods); %d code digests, %d params slices changed",
             len(ns.params.methods), changed, keys)  # fmt: skip


if __name__ == "__main__":
    run_stage(main)
