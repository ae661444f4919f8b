"""The report reads its metric keys and directions from the metric records (issue 44): a new
metric record that places its measure in the report (``Measure.report``) reaches the
report's table (its key and direction), the Findings, the Controls table and the judged-scope
tables with no other edit. The record is
written into a copy of the `pipeline` package, as a contributor adds one file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from pipeline.report import claims, controls, scopes
from pipeline.report.tables import FINDINGS_CUTOFF, placed, reading

ROOT = Path(__file__).resolve().parents[2]
METRIC = textwrap.dedent('''
    """A test metric: a fairness value placed in the Findings, Controls and judged scope."""

    from __future__ import annotations

    from typing import Any

    from pipeline.metrics.common import Measure, Metric


    def extra_share(ctx: Any, cutoffs: tuple[int, ...], cfg: Any = None) -> Any:
        """Not run here: the report reads its per-query column."""
        raise NotImplementedError


    RECORD = Metric(
        "extra_share", extra_share,
        (Measure("Extra@{k}", "↑", "a test fairness measure", lo=0.0, hi=1.0,
                 report=(("findings", 9), ("controls", 9), ("judged", 9))),),
        reference="none (test)",
    )
''')
REPORT = textwrap.dedent("""
    import numpy as np, polars as pl
    from pipeline.report import claims, controls, scopes, tidy
    from pipeline.report.significance import compare

    rng = np.random.default_rng(0)
    def frame(shift):  # 40 queries; the treatment raises only the new metric
        return pl.DataFrame({"query_id": [f"q{i}" for i in range(40)],
                             "MRR@10": rng.uniform(0, 1, 40), "NFaiRR@10": rng.uniform(0, 1, 40),
                             "Extra@10": np.clip(rng.uniform(0, 0.5, 40) + shift, 0, 1)})
    table = tidy.long_table({"baseline": {s: frame(0.0) for s in (1, 2, 3)},
                             "treat": {s: frame(0.4) for s in (1, 2, 3)}})  # the report's table
    print(tidy.directions(table).rows())
    pq = tidy.views(table)[tidy.ALL]
    cmp = compare(pq, "baseline")
    print(scopes.judged_markdown(cmp, "baseline", [], [10]))
    pairs = [controls.Pair("treat", "baseline", "the test")]
    print(controls.controls_markdown(controls.compare_controls(pq, pairs), pairs, 1))
    print("\\n".join(claims.findings_lines(cmp, "baseline")))
""")


def test_the_shipped_records_give_the_sections_the_report_always_had() -> None:
    """Read from the records, the sections list what the report hard-coded before (its
    outputs are unchanged), in the same order."""
    assert claims.HEADLINE == (
        ("MRR@10", "effective"), ("nDCG@10", "effective"), ("NFaiRR@10", "fair"),
        ("ARaB-tf-abs@10", "unfair"), ("LIWC@10", "unfair"), ("gap-abs", "unfair"),
    )  # fmt: skip
    assert controls.COLUMNS == ("NFaiRR@10", "ARaB-tf-abs@10", "gap-male-wins",
                                "gap-neutral-first", "MRR@10")  # fmt: skip
    assert scopes.SCOPE_AT_K == ("MRR@{k}", "nDCG@{k}", "NFaiRR@{k}", "ARaB-tf-abs@{k}",
                                 "AWRF@{k}")  # fmt: skip
    assert scopes.SCOPE_OVERALL == ("gap-abs",)
    assert [reading(m) for m in placed("controls")][-1] == "effective"
    assert FINDINGS_CUTOFF == 10


def test_a_new_metric_record_reaches_findings_controls_and_the_judged_scope(
    tmp_path: Path,
) -> None:
    shutil.copytree(ROOT / "pipeline", tmp_path / "pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (tmp_path / "pipeline" / "metrics" / "extra_share.py").write_text(METRIC, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-P", "-c", REPORT], cwd=tmp_path, env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    records, judged, rest = out.stdout.split("\n", 1)[0], *out.stdout.split("## Controls", 1)
    assert "('Extra@10', '↑', 0.0, 1.0)" in records  # its key and direction, from the record
    assert "| method | MRR@10 ↑ | NFaiRR@10 ↑ | Extra@10 ↑ |" in judged  # both tables
    assert judged.count("Extra@10 ↑") == 2
    (header,) = [line for line in rest.splitlines() if line.startswith("| treatment − control")]
    assert header.endswith("| Extra@10 | verdict |")  # the Controls table's new column
    findings = [line for line in rest.splitlines() if line.startswith("- **treat**")]
    assert findings and "fairer by Extra@10" in findings[0], rest
