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

Per-method stages. DVC 3.67's ``foreach`` gives every item the same ``deps`` list and does not
interpolate a list into it (``deps: ${item.deps}`` fails its schema; a non-string value inside
an entry is refused), and an explicit stage may not be named ``train@x``. What it does
interpolate is a string per entry from a ``foreach`` item, so the per-method stages iterate a
generated dict in dvc.yaml's ``vars`` (``method_code``: per method its ordering and one field
per plug-in file beyond the shared ones), and their ``deps`` hold the shared files and one
``${item.train_<n>}`` line per slot; a method with fewer files repeats its last one (DVC then
lists that path twice in dvc.lock: harmless). The stage names stay ``order@<m>``,
``train@<m>``, ``evaluate@<m>``. ``model.arch`` is a params key that ``dvc exp run -S`` may
change, so the family file is the templated ``pipeline/models/${model.arch}.py``, resolved by
DVC from the params of the run. The other choices are read from params.yaml when this
command runs: after changing a method's loss or ordering, adding a method or switching
``dataset.name``, run ``python -m pipeline.deps --write`` (``--check``, run by the tests,
fails while dvc.yaml is stale; a stage whose params changed reruns anyway).

    python -m pipeline.deps --write    # rewrite the code deps in dvc.yaml (all else kept)
    python -m pipeline.deps --check    # exit 1 with a diff when dvc.yaml is stale
    python -m pipeline.deps --show train@baseline   # one stage's code deps
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

VARS = "method_code"
"""The generated dict of dvc.yaml's `vars` that the per-method stages iterate."""


def unstaged_methods(methods: Sequence[str], dvc_yaml: str | Path = "dvc.yaml") -> list[str]:
    """The methods of ``methods`` that dvc.yaml's generated per-method stages lack (added to
    params.yaml without `python -m pipeline.deps --write`)."""
    doc = yaml.safe_load(Path(dvc_yaml).read_text(encoding="utf-8")) or {}
    table = next((v[VARS] for v in doc.get("vars") or [] if isinstance(v, dict) and VARS in v),
                 None)  # fmt: skip
    return [] if table is None else [m for m in methods if m not in table]
