"""The report's Findings say only what the intervals allow, and read magnitude and direction
together (SPEC §4.9, issues 21, 29 and 40)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml

from pipeline.report.claims import (
    HEADLINE,
    MALE_WINS,
    NEUTRAL_FIRST,
    Verdict,
    excludes_zero,
    mde_text,
    verdict,
    verdicts,
)
from pipeline.report.controls import Pair, compare_controls, controls_markdown
from pipeline.report.findings import design_rows, findings_markdown
from pipeline.report.significance import compare

ROOT = Path(__file__).resolve().parents[2]
N = 120
FOLDS = pl.DataFrame({"query_id": [f"q{i:03d}" for i in range(N)],
                      "fold": [i % 2 for i in range(N)]})  # fmt: skip
BASE = {"MRR@10": 0.9, "NFaiRR@10": 0.77, "ARaB-tf-abs@10": 0.1}
SHARES = {MALE_WINS: 0.5, NEUTRAL_FIRST: 0.6}


def _seeds(rng: np.random.Generator, shift: dict[str, float]) -> dict[int, pl.DataFrame]:
    out = {}
    for seed in (1, 2, 3):
        cols = {k: v + shift.get(k, 0.0) + rng.normal(0, 0.05, N) for k, v in BASE.items()}
        for k, share in SHARES.items():
            cols[k] = (rng.uniform(0, 1, N) < share + shift.get(k, 0.0)).astype(float)
        out[seed] = pl.DataFrame({"query_id": FOLDS["query_id"], **cols})
    return out


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[int, pl.DataFrame]]:
    rng = np.random.default_rng(0)
    return {
        "bm25": _seeds(rng, {}),
        "baseline": _seeds(rng, {}),
        "fairer": _seeds(rng, {"NFaiRR@10": 0.05}),
        "fairer_male": _seeds(rng, {"NFaiRR@10": 0.05, MALE_WINS: 0.35}),
        "neutral_male": _seeds(rng, {NEUTRAL_FIRST: 0.3, MALE_WINS: 0.35}),
        "same": _seeds(rng, {}),
        "worse": _seeds(rng, {"ARaB-tf-abs@10": 0.06, "MRR@10": -0.05}),
    }


@pytest.fixture(scope="module")
def cmp(runs: dict[str, dict[int, pl.DataFrame]]) -> pl.DataFrame:
    return compare(runs, "baseline", reference=["bm25"], folds=FOLDS)


def _holm(p: list[float]) -> list[float]:
    """Holm's step-down adjusted p, restated: the i-th smallest times (k − i), running max."""
    order = np.argsort(p)
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def _tost_inside(row: Mapping[str, Any], keys: tuple[str, ...], margin: float) -> bool:
    """The TOST at the level of the row's Bonferroni interval, restated: that interval's level
    1 − a from its half-width; inside ±margin where est ∓ t_{df,1−a}·se is."""
    from scipy import stats

    est, lo, hi, se, df = (row.get(k) for k in keys)
    if se is None:
        return bool(-margin < lo and hi < margin)
    if se == 0:
        return abs(est) < margin
    dist = stats.t(df) if df is not None else stats.norm
    a = 2 * dist.sf((hi - lo) / 2 / se)
    q = dist.ppf(1 - a)
    return bool(-margin < est - q * se and est + q * se < margin)


def check_verdict(
    v: Verdict, rows: Mapping[tuple[str, str], Mapping[str, Any]], tol: float = 0.0,
    primary: str = "NFaiRR@10", margin: float = 0.05,
) -> None:  # fmt: skip
    """A verdict agrees with its intervals, its direction tests and its MDEs (the rules of
    pipeline/report/claims.py and verdict_rule.py, restated here from the table alone);
    ``tol``: bounds this close to zero may fall either side (a CSV keeps 6 decimals)."""
    kinds = dict(HEADLINE)
    secondary = [c.metric for c in v.claims if kinds.get(c.metric, "effective") != "effective"
                 and c.metric != primary]  # fmt: skip
    holm = dict(zip(secondary, _holm([rows[(v.method, m)]["p_adjusted"] for m in secondary]),
                    strict=True))  # fmt: skip
    for c in v.claims:
        row = rows[(v.method, c.metric)]
        side = excludes_zero(row["ci_adj_low"], row["ci_adj_high"])
        assert (c.low, c.high) == (row["ci_adj_low"], row["ci_adj_high"])
        if tol and min(abs(row["ci_adj_low"]), abs(row["ci_adj_high"])) <= tol:
            continue
        if c.metric in holm and holm[c.metric] >= 0.05:
            side = 0  # a secondary needs Holm across the secondaries as well
        if side == 0:  # the interval contains zero: no claim, and its MDE (or why none)
            assert c.verdict == "none"
            assert mde_text(row) in c.text
            if row["mde"] is not None:
                assert f"{row['mde']:.2g}" in c.text or f"{row['mde']:.4f}" in c.text
            else:
                assert row["se"] == 0 or row["mde_limit"] is not None
        elif c.metric in (MALE_WINS, NEUTRAL_FIRST):
            assert c.verdict == ("more" if side > 0 else "less")
        else:
            good = side > 0 if kinds[c.metric] != "unfair" else side < 0
            assert c.verdict == ("better" if good else "worse")
    fair = [c for c in v.claims if kinds.get(c.metric, "effective") != "effective"]
    assert set(v.fairer) == {c.metric for c in fair if c.verdict == "better"}
    assert set(v.less_fair) == {c.metric for c in fair if c.verdict == "worse"}
    male = rows.get((v.method, MALE_WINS))
    lean = 0 if male is None else excludes_zero(male["target_low"], male["target_high"])
    moved = 0 if male is None else excludes_zero(male["ci_adj_low"], male["ci_adj_high"])
    assert (v.lean is None) == (lean == 0) and (v.moved is None) == (moved == 0)
    balanced = False
    if male is not None:
        shift = male["diff"]
        if moved or abs(shift) > margin:  # the side is named, with the shift in points
            side = "male" if shift > 0 else "female"
            word = f"more {side} wins" if moved else f"{side}-leaning"
            assert f"{word}: {100 * shift:+.1f} points" in v.label
        elif lean:
            assert v.lean is not None and v.lean in v.label
            assert (f"{v.lean} as " in v.label) == v.lean_as_baseline
        else:
            target = ("target_diff", "target_low", "target_high", "target_se", "target_df")
            change = ("diff", "ci_adj_low", "ci_adj_high", "se", "df")
            balanced = _tost_inside(male, target, margin) and _tost_inside(male, change, margin)
            assert ("balanced (within" in v.label) == balanced
            assert ("balance not established" in v.label) == (not balanced and bool(
                v.fairer or v.less_fair or v.neutral))  # fmt: skip
        assert "balanced within noise" not in v.label
    fairer = primary in v.fairer and not v.less_fair and (male is None or balanced)
    assert v.label.startswith("fairer by") == (primary in v.fairer and not fairer)
    assert (v.label in ("fairer", "fairer (F/M balance not measured)")) == fairer
    if not (v.fairer or v.less_fair or v.lean or v.moved or v.neutral or balanced) and (
        male is None or abs(male["diff"]) <= margin
    ):
        assert v.label == "no detectable difference in fairness or direction"


def test_verdicts_read_magnitude_and_direction_together(cmp: pl.DataFrame) -> None:
    got = {v.method: v for v in verdicts(cmp, "baseline", ["bm25"])}
    assert got["fairer"].label == "fairer by NFaiRR@10, balance not established"
    shift = {m: 100 * r["diff"] for (m, k), r in _rows(cmp).items() if k == MALE_WINS
             and r["diff"] is not None}  # fmt: skip
    assert shift["fairer_male"] == pytest.approx(35, abs=6)  # + 0.35 of the share, drawn
    assert got["fairer_male"].label == (f"fairer by NFaiRR@10, more male wins: "
                                        f"{shift['fairer_male']:+.1f} points")  # fmt: skip
    assert got["neutral_male"].label == (f"neutral first more often, more male wins: "
                                         f"{shift['neutral_male']:+.1f} points")  # fmt: skip
    assert got["same"].label == "no detectable difference in fairness or direction"
    assert got["worse"].label == "less fair by ARaB-tf-abs@10, balance not established"
    claims = {(c.method, c.metric): c for v in got.values() for c in v.claims}
    assert claims[("fairer", "NFaiRR@10")].text.startswith("fairer by NFaiRR@10 (+0.05")
    assert claims[("worse", "MRR@10")].text.startswith("less effective by MRR@10 (-0.0")
    quiet = claims[("same", "NFaiRR@10")].text
    assert quiet.startswith("no detectable difference in NFaiRR@10 (MDE 0.0")
    rows = _rows(cmp)
    for v in got.values():
        check_verdict(v, rows)


def _rows(cmp: pl.DataFrame) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["method"], r["metric"]): r for r in cmp.iter_rows(named=True)}


def test_a_lean_the_baseline_shares_is_named_as_such() -> None:
    """Baseline and method both rank the male version first on ~85% of the queries: the
    method's verdict says it leans as the baseline does (and is not "fairer")."""
    rng = np.random.default_rng(4)
    lean = {MALE_WINS: 0.35}
    runs = {"baseline": _seeds(rng, lean), "m": _seeds(rng, {**lean, "NFaiRR@10": 0.05})}
    cmp = compare(runs, "baseline", folds=FOLDS)
    (v,) = verdicts(cmp, "baseline")
    assert v.label == "fairer by NFaiRR@10, male-leaning as the baseline" and v.lean_as_baseline
    check_verdict(v, {(r["method"], r["metric"]): r for r in cmp.iter_rows(named=True)})


def test_mde_text_bounds_and_identical_values() -> None:
    assert mde_text({"mde": 0.01234, "mde_limit": 1.0, "se": 0.003}) == "MDE 0.0123"
    assert mde_text({"mde": 0.00012, "mde_limit": 1.0, "se": 1e-5}) == "MDE 0.00012"
    beyond = mde_text({"mde": None, "mde_limit": 0.49, "se": 0.4})
    assert beyond == "MDE beyond the metric's range: no change up to 0.490 is detectable"
    same = mde_text({"mde": None, "mde_limit": 1.0, "se": 0.0})
    assert same == "identical on every query and seed"


def test_a_share_gets_no_mde_beyond_what_it_can_move() -> None:
    """Two queries, three seeds: the male-wins MDE would be far above 1; it is given as
    beyond the share's range instead."""
    ids = ["a", "b"]
    base = {s: pl.DataFrame({"query_id": ids, MALE_WINS: [0.0, 1.0]}) for s in (1, 2, 3)}
    other = {s: pl.DataFrame({"query_id": ids, MALE_WINS: [float(s % 2), 1.0]})
             for s in (1, 2, 3)}  # fmt: skip
    row = compare({"b": base, "o": other}, "b").filter(pl.col("method") == "o").row(0, named=True)
    assert row["mde"] is None and row["mde_limit"] == pytest.approx(0.5)
    assert "beyond the metric's range" in mde_text(row)


def test_design_rows_pool_the_sd_and_the_mdes(cmp: pl.DataFrame) -> None:
    rows = {r["metric"]: r for r in design_rows(cmp, "baseline", ["bm25"]).iter_rows(named=True)}
    part = cmp.filter(~pl.col("method").is_in(["baseline", "bm25"])
                      & (pl.col("metric") == "NFaiRR@10"))  # fmt: skip
    pooled = float(np.sqrt(np.mean(np.square(part["sd_diff"].to_numpy()))))
    assert rows["NFaiRR@10"]["pooled_sd"] == pytest.approx(pooled)
    gaps = part["mde"].to_numpy()
    assert rows["NFaiRR@10"]["mde"] == pytest.approx(float(np.sqrt(np.mean(np.square(gaps)))))
    assert rows["NFaiRR@10"]["models"] == 6
    # simulated MDE: cells differ by two independent N(0, 0.05²), σ²_e = 0.005 over N = 360
    # cells, SE = √(0.005/360) = 0.00373. With the SE known the MDE at 0.05/5 would be
    # (z_0.995 + z_0.8)·SE = (2.5758 + 0.8416)·0.00373 = 0.0127; the test's own is above it,
    # and below the worst case of its bound: variance ×5.6, 4 df, (4.604 + 0.941)·0.00883
    sim = design_rows(cmp, "baseline", ["bm25"], 0.05).filter(pl.col("metric") == "NFaiRR@10")
    assert 0.0127 < sim["sim_mde"][0] < 0.049
    text = findings_markdown(cmp, "baseline", skip=["bm25"], seeds=[1, 2, 3])
    assert f"| {sim['sim_mde'][0]:.4f} |" in text and "Simulated MDE" in text
    assert f"{N} queries × 3 seeds (1, 2, 3) × 2 fold(s) = 6 trained models" in text
    assert "- **same**: **no detectable difference in fairness or direction**." in text
    assert "- **fairer**: **fairer by NFaiRR@10, balance not established**. fairer by" in text
    assert "**Primary fairness metric: NFaiRR@10**" in text and "Holm" in text
    assert "male-wins share" in text and "against ½" in text


def test_controls_are_compared_with_their_treatment(runs: dict[str, Any]) -> None:
    pairs = [Pair("fairer_male", "fairer", "the lean"), Pair("fairer", "same", "the NFaiRR shift")]
    ccmp = compare_controls(runs, pairs, folds=FOLDS)
    assert ccmp is not None
    row = ccmp.filter((pl.col("control") == "fairer") & (pl.col("method") == "fairer_male")
                      & (pl.col("metric") == "NFaiRR@10")).row(0, named=True)  # fmt: skip
    assert abs(row["diff"]) < 0.02 and row["ci_adj_low"] < 0 < row["ci_adj_high"]
    text = controls_markdown(ccmp, pairs, 2)
    assert "Bonferroni over the 2 pairs" in text
    assert "| fairer_male − fairer | the lean |" in text
    row = text.split("| fairer_male − fairer |")[1].split("\n")[0]
    assert re.search(r"more male wins: \+\d+\.\d points \|$", row)
    assert (
        "| fairer − same | the NFaiRR shift |" in text
        and "| fairer by NFaiRR@10, balance not established |\n" in text
    )
    assert "- **fairer − same**: **fairer by NFaiRR@10, balance not established**." in text


def test_committed_findings_are_generated_from_the_committed_intervals() -> None:
    """Every verdict of the committed metrics/comparison.csv (main and transfer collection)
    and metrics/controls.csv agrees with its intervals, its direction tests and its MDEs,
    and the committed summary's Findings are exactly those verdicts (and so the README's)."""
    cmp = pl.read_csv(ROOT / "metrics" / "comparison.csv", infer_schema_length=None)
    summary = (ROOT / "metrics" / "summary.md").read_text(encoding="utf-8")
    if "target_p_adjusted" not in cmp.columns:
        pytest.skip("the committed results predate the model-unit test (issue 29): dvc repro")
    # written before the verdict rule of issue 40: its labels come with the next dvc repro
    current = "Primary fairness metric" in summary
    # the `post:` entries' rows have their own section ("Inference-time methods"), no verdict
    post = list((yaml.safe_load((ROOT / "params.yaml").read_text()) or {}).get("post") or {})
    cmp = cmp.filter(~pl.col("method").is_in(post))
    main_text, _, transfer_text = summary.partition("\n## Transfer")
    transfer = pl.col("metric").str.starts_with("transfer.")
    untested = pl.col("diff").is_null() & ~pl.col("method").is_in(["bm25", "zero-shot"])
    baseline = cmp.filter(~transfer & untested)["method"][0]
    parts = [(cmp.filter(~transfer), main_text.split("\n## Controls")[0]),
             (cmp.filter(transfer).with_columns(pl.col("metric").str.strip_prefix("transfer.")),
              transfer_text)]  # fmt: skip
    for part, text in parts:
        rows = {(r["method"], r["metric"]): r for r in part.iter_rows(named=True)}
        found = verdicts(part, baseline, ["bm25", "zero-shot"])
        assert found or part.is_empty()
        for v in found:
            check_verdict(v, rows, tol=1e-6)
            assert not current or f"- **{v.method}**: **{v.label}**." in text, v.method
    assert {m for m, _ in HEADLINE} <= set(cmp["metric"])
    controls = pl.read_csv(ROOT / "metrics" / "controls.csv", infer_schema_length=None)
    for control in controls["control"].unique().to_list():
        part = controls.filter(pl.col("control") == control)
        rows = {(r["method"], r["metric"]): r for r in part.iter_rows(named=True)}
        for name in part["method"].unique().to_list():
            v = verdict(name, rows, control, "its control")
            if v is None:
                continue
            check_verdict(v, rows, tol=1e-6)
            assert not current or f"- **{v.method} − {control}**: **{v.label}**." in summary
