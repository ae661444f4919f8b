"""The report's Findings say only what the intervals allow (SPEC §4.9, issue 21)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.report.claims import HEADLINE, claims, design_rows, findings_markdown
from pipeline.report.significance import compare

ROOT = Path(__file__).resolve().parents[2]
N = 120


def _seeds(rng: np.random.Generator, shift: dict[str, float]) -> dict[int, pl.DataFrame]:
    base = {"MRR@10": 0.9, "NFaiRR@10": 0.77, "ARaB-tf-abs@10": 0.1, "gap-male-wins": 0.5}
    out = {}
    for seed in (1, 2, 3):
        cols = {k: v + shift.get(k, 0.0) + rng.normal(0, 0.05, N) for k, v in base.items()}
        cols["gap-male-wins"] = (rng.uniform(0, 1, N) < base["gap-male-wins"]
                                 + shift.get("gap-male-wins", 0.0)).astype(float)  # fmt: skip
        out[seed] = pl.DataFrame({"query_id": [f"q{i:03d}" for i in range(N)], **cols})
    return out


@pytest.fixture(scope="module")
def cmp() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    runs = {
        "bm25": _seeds(rng, {}),
        "baseline": _seeds(rng, {}),
        "fairer": _seeds(rng, {"NFaiRR@10": 0.05, "gap-male-wins": 0.35}),
        "same": _seeds(rng, {}),
        "worse": _seeds(rng, {"ARaB-tf-abs@10": 0.06, "MRR@10": -0.05}),
    }
    return compare(runs, "baseline", reference=["bm25"])


def test_a_claim_needs_its_adjusted_interval_to_exclude_zero(cmp: pl.DataFrame) -> None:
    got = {(c.method, c.metric): c for c in claims(cmp, "baseline", ["bm25"])}
    assert got[("fairer", "NFaiRR@10")].verdict == "better"
    assert got[("fairer", "NFaiRR@10")].text.startswith("fairer by NFaiRR@10 (+0.05")
    assert got[("worse", "ARaB-tf-abs@10")].verdict == "worse"
    assert got[("worse", "MRR@10")].text.startswith("less effective by MRR@10 (-0.0")
    same = got[("same", "NFaiRR@10")]
    assert same.verdict == "none" and re.fullmatch(
        r"no detectable difference in NFaiRR@10 \(MDE 0\.\d{4}\)", same.text
    )
    assert got[("fairer", "gap-male-wins")].verdict == "more"  # sign test on the direction
    assert ("same", "gap-male-wins") not in got
    for c in got.values():  # every verdict agrees with its interval
        if c.verdict in ("better", "worse"):
            assert c.low is not None and c.high is not None and (c.low > 0 or c.high < 0)
        elif c.verdict == "none":
            assert c.low is not None and c.high is not None and c.low <= 0 <= c.high


def test_design_rows_pool_the_sd_and_the_mdes(cmp: pl.DataFrame) -> None:
    rows = {r["metric"]: r for r in design_rows(cmp, "baseline", ["bm25"]).iter_rows(named=True)}
    part = cmp.filter(~pl.col("method").is_in(["baseline", "bm25"])
                      & (pl.col("metric") == "NFaiRR@10"))  # fmt: skip
    pooled = float(np.sqrt(np.mean(np.square(part["sd_diff"].to_numpy()))))
    assert rows["NFaiRR@10"]["pooled_sd"] == pytest.approx(pooled)
    gaps = part["mde"].to_numpy()  # each from its test's se (seeds' part included)
    assert rows["NFaiRR@10"]["mde"] == pytest.approx(float(np.sqrt(np.mean(np.square(gaps)))))
    text = findings_markdown(cmp, "baseline", skip=["bm25"], seeds=[1, 2, 3])
    assert "3 seeds (1, 2, 3)" in text and f"{N} queries" in text
    assert "- **same**: no detectable difference" in text
    assert "- **fairer**: fairer by NFaiRR@10" in text


def test_committed_findings_are_generated_from_the_committed_intervals() -> None:
    """The Findings of metrics/summary.md (and so of the README) are exactly what
    claims.py writes from metrics/comparison.csv: no claim without its interval."""
    path = ROOT / "metrics" / "comparison.csv"
    summary = (ROOT / "metrics" / "summary.md").read_text(encoding="utf-8")
    if "## Findings" not in summary:
        pytest.skip("the committed results predate the Findings section")
    cmp = pl.read_csv(path, infer_schema_length=None)
    main = cmp.filter(~pl.col("metric").str.starts_with("transfer."))
    untested = pl.col("diff").is_null() & ~pl.col("method").is_in(["bm25", "zero-shot"])
    baseline = main.filter(untested)["method"][0]
    for c in claims(main, baseline, ["bm25", "zero-shot"]):
        line = next(x for x in summary.splitlines() if x.startswith(f"- **{c.method}**:"))
        if c.verdict == "none":  # listed by name, or the whole line says so (MDEs: the table)
            quiet = "no detectable difference from the baseline." in line
            assert quiet or (c.metric in line.split("no detectable difference in ")[-1]), line
        else:  # comparison.csv keeps p to 6 decimals: the text up to the adjusted p
            assert c.text.split(", adjusted p")[0] in line, (c.method, c.text)
        if c.verdict == "none":
            assert c.low is not None and c.high is not None and c.low <= 0 <= c.high
        elif c.verdict in ("better", "worse"):
            assert c.low is not None and c.high is not None and (c.low > 0 or c.high < 0)
    assert {m for m, _ in HEADLINE} <= set(main["metric"])
