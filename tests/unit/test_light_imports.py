"""Stages that run no model start without torch/transformers (process start-up time), and
loading params never imports torch."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import stages

pytestmark = pytest.mark.slow  # the fast loop skips it (README)

LIGHT = ["pipeline.params", "pipeline.train.losses", *stages.LIGHT]


@pytest.mark.parametrize("module", LIGHT)
def test_module_does_not_import_torch(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing {module} imports {out.stdout.strip()}"


def test_loading_params_does_not_import_torch() -> None:
    """Validating params.yaml checks every loss and ordering name against its registry
    (pipeline.train.losses, pipeline.ordering) without importing torch or transformers."""
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys, pipeline.params\n"
        "p = pipeline.params.load_params('params.yaml')\n"
        "heavy = sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
        "print(len(p.methods), ','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    n_methods, _, heavy = out.stdout.strip().partition(" ")
    assert int(n_methods) > 0
    assert heavy == "", f"loading params imports {heavy}"


def test_effectiveness_loads_ranx_kernels_only_and_ranx_whole_later() -> None:
    """MRR/nDCG load `ranx.metrics` without ranx's `__init__` (matplotlib, scipy.stats,
    pandas' and ir_datasets' imports: pipeline.metrics.effectiveness.ranx_metrics); a later
    `import ranx` still gets all of ranx, whose `evaluate` gives the same values."""
    code = textwrap.dedent("""
        import sys, numpy as np, polars as pl
        from pipeline.metrics.effectiveness import ranx_per_query
        run = pl.DataFrame({"query_id": ["a"] * 3 + ["b"] * 3, "doc_id": list("xyzxyw"),
                            "score": [3.0, 2.0, 1.0] * 2, "rank": [1, 2, 3] * 2})
        qrels = pl.DataFrame({"query_id": ["a", "b"], "doc_id": ["y", "w"],
                              "relevance": [1, 2]})
        ours = ranx_per_query(run, qrels, ["mrr@10", "ndcg@2"])
        heavy = [m for m in ("matplotlib", "scipy.stats", "ir_datasets") if m in sys.modules]
        import ranx
        q = np.array([[[1.0, 1.0]], [[3.0, 2.0]]])
        r = np.array([[[0.0, -1], [1.0, -2], [2.0, -3]], [[0.0, -1], [1.0, -2], [3.0, -3]]])
        theirs = ranx.evaluate(q, r, ["mrr@10", "ndcg@2"], return_mean=False)
        same = all(np.array_equal(ours[m].to_numpy(), theirs[m]) for m in ("mrr@10", "ndcg@2"))
        print(",".join(heavy), same, ours["mrr@10"].to_list(), "scipy.stats" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    heavy, same, *rest = out.stdout.split(" ", 2)
    assert heavy == "", f"evaluating effectiveness imported {heavy}"
    assert same == "True", out.stdout
    assert rest[0].strip().endswith("True")  # ranx whole after `import ranx`
    assert "[0.5, 0.3333333333333333]" in rest[0]
