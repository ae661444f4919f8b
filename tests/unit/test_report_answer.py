"""The README's first screen (`pipeline.report.answer`): what the committed default found,
checked against the raw intervals of metrics/comparison.csv, not against the verdict code."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _answer() -> str:
    summary = (ROOT / "metrics" / "summary.md").read_text(encoding="utf-8")
    return summary.split("## What the default found", 1)[1].split("\n## ", 1)[0]


def test_the_answer_counts_what_the_intervals_show() -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    trained = list(params["methods"])[1:]  # the first is the baseline
    cmp = pl.read_csv(ROOT / "metrics" / "comparison.csv", infer_schema_length=None)
    rows = cmp.filter(pl.col("method").is_in(trained))

    def beyond(metric: str, side: int) -> list[str]:
        r = rows.filter(pl.col("metric") == metric)
        hit = pl.col("ci_adj_low") > 0 if side > 0 else pl.col("ci_adj_high") < 0
        return r.filter(hit)["method"].to_list()

    primary = params["report"]["primary"]
    up, down = beyond(primary, 1), beyond(primary, -1)
    text = _answer()
    assert f"{len(trained)} trained methods" in text
    assert (f"**{len(up)} made the ranking fairer**" if up else "**None made") in text
    assert all(f"`{m}` +" in text for m in up), (up, text)
    assert (f"**{len(down)} less fair**" in text) == bool(down)
    quiet = len(trained) - len(up) - len(down)
    assert f"**{quiet} showed no detectable difference**" in text
    mrr = beyond("MRR@10", 1) + beyond("MRR@10", -1)
    assert ("No method changed MRR@10 detectably" in text) == (not mrr)
    table = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert [line.split(" | ")[0][2:] for line in table[1:]] == trained  # one row each


def test_the_frontier_sentence_counts_the_placements_below_it() -> None:
    summary = (ROOT / "metrics" / "summary.md").read_text(encoding="utf-8")
    section = summary.split("### Findings: every trained method against the re-ranking", 1)[1]
    section = section.split("\n### ", 1)[0]
    on = len(re.findall(r"^- \*\*[^*]+\*\*: on the re-ranking frontier", section, re.M))
    above = len(re.findall(r"^- \*\*[^*]+\*\*: above the frontier", section, re.M))
    assert f"{above} lie above it, {on} on it" in _answer()
