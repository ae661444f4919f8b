"""`python -m pipeline.deps`: each DVC stage depends on the code it runs, generated (issue 34).

A stage's code deps are the project files its command imports: the import closure of its
module (``python -m stages.<name>``) within ``pipeline/`` and ``stages/``
(`pipeline.deps.imports`: ``ast`` over the source, lazy imports inside functions included),
the resource files those modules name, and the plug-in records it runs
(`pipeline.deps.records`). The registries import every plug-in file of their package when
loaded, but a stage runs only some of them, so the closure leaves registry discovery out and
each stage adds what it uses (``USES``): every source (extract), the metric records (evaluate,
audit, report: the report reads each metric's table column and direction from its record),
the model family of ``model.arch``, and per method its ordering and its loss terms. A stage
module missing from ``USES`` gets every record of every registry it imports (safe, not tight).

Code digests (`pipeline.deps.digest`). DVC rewrites dvc.lock after every stage it runs, and
one lock entry per code file per stage (~5,000 on the default) made that rewrite most of
DVC's own time. So the files are not DVC deps: the ``params`` stage, which depends on all of
``pipeline/`` and ``stages/``, writes ``data/code/<stage>.txt`` per stage module (per method
for ``order`` and ``train``) listing each file the stage runs with its MD5, and each stage
depends on its digest alone. An edit reruns ``params`` (seconds), then exactly the stages
whose digest changed; ``dvc status`` right after an edit names only ``params``
(``python -m pipeline.deps --show STAGE`` lists a stage's files). ``model.arch`` and
``dataset.name`` are read from params.yaml when the digests are written, so a
``dvc exp run -S model.arch=…`` retrains with the new family's file in the digest.

Params slices (`pipeline.deps.slices`, issue 42). The same holds for params: no stage but
``params`` lists ``params:``; the ``params`` stage writes ``data/params/<stage>.yaml``, the
keys each stage reads with their values, and each stage depends on its slice (``--write``
adds that dep; a stage listing ``params:`` is refused). A run-time witness
(`pipeline.witness`, ``PIPELINE_WITNESS=<dir>``) records the files each stage runs and
the keys it reads; tests/stages/test_witness.py checks the digests, the slices and ``USES``
against it on the tiny profile.

Per-method stages. DVC 3.67's ``foreach`` gives every item the same ``deps`` list, and an
explicit stage may not be named ``train@x``; the per-method stages iterate a generated dict
in dvc.yaml's ``vars`` (``method_code``: per method its ordering, for its
``orderings.<name>`` section) and depend on ``data/code/train@${key}.txt``. After adding a
method, run ``python -m pipeline.deps --write`` (``--check``, run by the tests, fails while
dvc.yaml is stale; the report names a method that has no stages yet).

    python -m pipeline.deps --write    # rewrite the code deps in dvc.yaml (all else kept)
    python -m pipeline.deps --check    # exit 1 with a diff when dvc.yaml is stale
    python -m pipeline.deps --show train@baseline   # one stage's deps, its digest's files
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

VARS = "method_code"
"""The generated dict of dvc.yaml's `vars` that the per-method stages iterate."""
POST_VARS = "post_code"
"""The generated dict of the `post:` entries (per entry its ``base``): `post@<entry>`."""
EVAL_VARS = "eval_code"
"""The generated dict of every row the `evaluate` stage iterates: the methods and the
`post:` entries (per row its ``kind``)."""


def unstaged_methods(methods: Sequence[str], dvc_yaml: str | Path = "dvc.yaml") -> list[str]:
    """The methods of ``methods`` that dvc.yaml's generated per-method stages lack (added to
    params.yaml without `python -m pipeline.deps --write`)."""
    doc = yaml.safe_load(Path(dvc_yaml).read_text(encoding="utf-8")) or {}
    table = next((v[EVAL_VARS] for v in doc.get("vars") or []
                  if isinstance(v, dict) and EVAL_VARS in v), None)  # fmt: skip
    return [] if table is None else [m for m in methods if m not in table]
