"""The verdict rule of issue 40 (pipeline/report/verdict_rule.py): one primary fairness
metric, Holm across the secondary ones, the F/M balance by equivalence, and the primary
effect read on the judged scope and the transfer collection; expected values by hand and
from the numbers issue 40 measured on the committed default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.errors import InputError
from pipeline.report.claims import MALE_WINS, finding_line, verdict, verdicts
from pipeline.report.verdict_rule import VerdictRule, holm, scope_reading

ROOT = Path(__file__).resolve().parents[2]
Z_TOST = 2.9024  # z_{1 − 0.05/27}: the one-sided quantile of each test of the TOST
Z_TWO = 3.1130  # z_{1 − 0.05/54}: the Bonferroni-level two-sided interval's


def _row(diff: float, low: float, high: float, p_adj: float = 0.5, **extra: Any) -> dict[str, Any]:
    return {"diff": diff, "ci_adj_low": low, "ci_adj_high": high, "p_adjusted": p_adj,
            "mde": 0.01, "mde_limit": 1.0, "se": 0.004, "mean": 0.5, **extra}  # fmt: skip


def _male(share: float, shift: float, se_share: float, se_shift: float) -> dict[str, Any]:
    """A male-wins row whose intervals are the normal ones at 0.05/27 (df null)."""
    return {
        "mean": share, "diff": shift, "se": se_shift, "df": None, "mde": 0.1, "mde_limit": 0.5,
        "ci_adj_low": shift - Z_TWO * se_shift, "ci_adj_high": shift + Z_TWO * se_shift,
        "target_diff": share - 0.5, "target_se": se_share, "target_df": None,
        "target_low": share - 0.5 - Z_TWO * se_share, "target_high": share - 0.5 + Z_TWO * se_share,
        "p_adjusted": 1.0,
    }  # fmt: skip


def test_holm_by_hand() -> None:
    """Sorted 0.01, 0.03, 0.04 → ×3, ×2, ×1 = 0.03, 0.06, 0.04 → running max 0.03, 0.06, 0.06."""
    assert holm([0.04, 0.01, 0.03, None]) == pytest.approx([0.06, 0.03, 0.06, None])  # type: ignore[list-item]


def test_the_primary_decides_and_the_secondaries_are_holm_adjusted() -> None:
    """NFaiRR@10 improves; ARaB and LIWC have intervals that exclude 0 but Holm over the three
    secondaries (0.02·3 = 0.06, then 0.03·2 = 0.06) keeps neither below 0.05."""
    rows = {
        ("m", "NFaiRR@10"): _row(0.02, 0.01, 0.03, 0.001),
        ("m", "ARaB-tf-abs@10"): _row(-0.01, -0.02, -0.001, 0.03),
        ("m", "LIWC@10"): _row(-0.02, -0.04, -0.001, 0.02),
        ("m", "gap-abs"): _row(0.1, -0.1, 0.3, 0.5),
    }
    v = verdict("m", rows, "b")
    assert v is not None and v.fairer == ("NFaiRR@10",)
    assert v.label == "fairer (F/M balance not measured)"
    text = next(c.text for c in v.claims if c.metric == "LIWC@10")
    assert text.startswith("no detectable difference in LIWC@10 (secondary, Holm p 0.06")
    # the secondaries' p 0.01, 0.02: Holm 0.03, 0.04 < 0.05: fairer by both as well
    rows[("m", "ARaB-tf-abs@10")]["p_adjusted"] = 0.01
    v = verdict("m", rows, "b")
    assert v is not None and set(v.fairer) == {"NFaiRR@10", "ARaB-tf-abs@10", "LIWC@10"}
    # without the primary: only the secondaries improve, and the label says so
    rows[("m", "NFaiRR@10")] = _row(0.0, -0.01, 0.01, 1.0)
    v = verdict("m", rows, "b")
    assert v is not None
    assert v.label == "fairer by secondary ARaB-tf-abs@10, LIWC@10 only"
    # a secondary that worsens vetoes a plain "fairer"
    rows[("m", "NFaiRR@10")] = _row(0.02, 0.01, 0.03, 0.001)
    rows[("m", "ARaB-tf-abs@10")] = _row(0.01, 0.001, 0.02, 0.01)
    v = verdict("m", rows, "b")
    assert v is not None and v.label == "fairer by NFaiRR@10, LIWC@10, less fair by ARaB-tf-abs@10"
    # with ARaB as the primary, its worsening decides; NFaiRR (Holm 0.001·3) and LIWC
    # (0.02·2) are then the secondaries that improve
    v = verdict("m", rows, "b", rule=VerdictRule(primary="ARaB-tf-abs@10"))
    assert v is not None
    assert v.label == "fairer by secondary NFaiRR@10, LIWC@10 only, less fair by ARaB-tf-abs@10"
    with pytest.raises(InputError, match=r"report\.primary: expected one of"):
        VerdictRule(primary="MRR@10")


@pytest.mark.parametrize(
    ("share", "shift", "se_share", "se_shift", "words"),
    [
        # TOST: 0.01 ± 2.9024·0.01 = [−0.019, +0.039] and 0.005 ± 0.029: both inside ±0.05
        (0.51, 0.005, 0.01, 0.01, "balanced (within ±5 points)"),
        # the same with SE 0.0165: the two-sided interval ±0.0514 would veto, the TOST ±0.0479
        # does not
        (0.50, 0.0, 0.0165, 0.0165, "balanced (within ±5 points)"),
        # share 0.02 ± 0.145: wider than the margin
        (0.52, 0.02, 0.05, 0.05, "balance not established"),
        # 62% vs 52%: +9.6 points, inside noise (0.096 − 3.113·0.05 < 0) but beyond the margin
        (0.617, 0.096, 0.05, 0.05, "male-leaning: +9.6 points"),
        # −7 points beyond noise (−0.07 + 3.113·0.02 < 0)
        (0.45, -0.07, 0.05, 0.02, "more female wins: -7.0 points"),
    ],
)
def test_balance_by_equivalence(
    share: float, shift: float, se_share: float, se_shift: float, words: str
) -> None:
    rows = {("m", "NFaiRR@10"): _row(0.02, 0.01, 0.03, 0.001),
            ("m", MALE_WINS): _male(share, shift, se_share, se_shift),
            ("b", MALE_WINS): {"mean": share - shift}}  # fmt: skip
    v = verdict("m", rows, "b")
    assert v is not None and v.balance is not None
    assert v.balance.words == words
    expected = "fairer" if words.startswith("balanced") else f"fairer by NFaiRR@10, {words}"
    assert v.label == expected


@pytest.mark.parametrize(
    ("main", "diff", "low", "high", "word"),
    [
        (1, 0.02, 0.01, 0.03, "holds"),
        (1, 0.01, -0.005, 0.025, "vanishes"),
        (1, -0.018, -0.05, 0.014, "reverses"),
        (1, -0.02, -0.03, -0.01, "reverses beyond noise"),
        (-1, 0.01, -0.005, 0.025, "reverses"),
        (0, 0.02, 0.01, 0.03, "fairer"),
        (0, 0.0, -0.01, 0.01, "no detectable difference"),
    ],
)
def test_the_primary_effect_on_a_scope(
    main: int, diff: float, low: float, high: float, word: str
) -> None:
    """The wording of issue 40: baseline 0.5, change −3.6%, MDE 0.065 = 13% of it."""
    row = _row(diff, low, high, change_pct=-3.6, baseline=0.5, mde=0.065)
    text = scope_reading("NFaiRR@10", 1, main, row, "GenderBias-QA", "transfer")
    assert text == f"{word} on GenderBias-QA (NFaiRR@10 -3.6%; transfer MDE 13%)"
    # a metric where lower is fairer: the same difference read the other way round
    flipped = scope_reading("ARaB-tf-abs@10", -1, -main, row, "GenderBias-QA", "transfer")
    assert flipped.split(" on ")[0] == {"fairer": "less fair"}.get(word, word)


def _committed() -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    cmp = pl.read_csv(ROOT / "metrics" / "comparison.csv", infer_schema_length=None)
    if "target_p_adjusted" not in cmp.columns:
        pytest.skip("the committed results predate the model-unit test (issue 29): dvc repro")

    def scope(prefix: str) -> pl.DataFrame:
        part = cmp.filter(pl.col("metric").str.starts_with(f"{prefix}."))
        return part.with_columns(pl.col("metric").str.strip_prefix(f"{prefix}."))

    main = cmp.filter(~pl.col("metric").str.contains(r"^(judged|transfer)\."))
    return main, {"judged": scope("judged"), "transfer": scope("transfer")}


def test_the_committed_default_reads_as_issue_40_measured() -> None:
    """neutrality_kl moves the male-wins share from 52% to 62% (+0.096): named, not
    "balanced"; penalty_relevant's and neutrality_kl's NFaiRR gain vanishes on the judged
    scope and reverses on GenderBias-QA (−3.6%, −4.1%), equalizeir's loss reverses there."""
    main, scopes = _committed()
    got = {v.method: v for v in verdicts(main, "baseline", ["bm25", "zero-shot"])}
    kl = got["neutrality_kl"]
    assert kl.label == "fairer by NFaiRR@10, neutral first more often, male-leaning: +9.6 points"
    assert all("balanced" not in v.label for v in got.values())
    rows = {(r["method"], r["metric"]): r for r in main.iter_rows(named=True)}
    scoped = {k: {(r["method"], r["metric"]): r for r in f.iter_rows(named=True)}
              for k, f in scopes.items()}  # fmt: skip
    lines = {m: finding_line(v, rows, scopes=scoped) for m, v in got.items()}
    assert "vanishes on the judged scope (NFaiRR@10 +1.4%" in lines["penalty_relevant"]
    assert "reverses on GenderBias-QA (NFaiRR@10 -3.6%; transfer MDE" in lines["penalty_relevant"]
    assert "vanishes on the judged scope (NFaiRR@10 +2.1%" in lines["neutrality_kl"]
    assert "reverses on GenderBias-QA (NFaiRR@10 -4.1%; transfer MDE" in lines["neutrality_kl"]
    assert "reverses on GenderBias-QA (NFaiRR@10 +1.1%" in lines["equalizeir"]
    for line in lines.values():
        assert "on the judged scope (" in line and "on GenderBias-QA (" in line
