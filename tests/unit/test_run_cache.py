"""Every stage that computes (trains, reranks, evaluates) can be restored from DVC's
run-cache: `dvc repro` after `dvc exp run -S x=1` and back, or after a killed run, checks the
outputs out instead of recomputing them. DVC saves a stage's run in its run-cache only when
each output is cached or is a metric or a plot (dvc/stage/__init__.py, ``Stage.run``:
``no_cache_outs``); the stages are read through DVC's own index, so the rule is DVC's."""

from __future__ import annotations

from pathlib import Path

from dvc.repo import Repo

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = {"report", "audit", "curriculum_figure"}
"""Stages whose tables are committed to git (cache: false, not metrics): seconds to rerun."""


def test_every_computing_stage_can_enter_the_run_cache() -> None:
    with Repo(str(ROOT)) as repo:
        stages = list(repo.index.stages)
    assert len(stages) > 20
    blocked = {
        s.addressing: [o.def_path for o in s.outs
                       if not o.use_cache and not (o.is_metric or o.is_plot)]
        for s in stages if s.addressing.split("@")[0] not in COMMITTED
    }  # fmt: skip
    assert not {k: v for k, v in blocked.items() if v}, blocked
