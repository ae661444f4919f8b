"""Inference-time methods (pipeline/post, SPEC §6.8): each post-processor on hand-computed
rankings (ties and λ = 0 included), the FA*IR table against scipy's binomial quantiles, the
`post:` params and the frontier's placement rule on hand-made points."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
import yaml
from scipy.stats import binom

from pipeline.config import ParamsError
from pipeline.params import parse_params
from pipeline.post import POSTS, get_post
from pipeline.post.fa_ir import FairConfig, fa_ir, fair_order, minimum
from pipeline.post.score_shift import ScoreShiftConfig, score_shift
from pipeline.report.frontier import Point, frontier_at, placement, series

ROOT = Path(__file__).resolve().parents[2]


def _run(rows: list[tuple[str, str, float]]) -> pl.DataFrame:
    """A run from (query, doc, score) rows in rank order per query."""
    frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
    rank = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query_id").alias("rank")
    return frame.with_columns(rank)


def _attrs(rows: list[tuple[str, float, float, str | None]]) -> pl.DataFrame:
    """Attributes from (doc, ζ, signed Ψ_tf, group) rows."""
    docs, zeta, psi, group = zip(*rows, strict=True)
    columns = {"doc_id": docs, "neutrality": zeta, "psi_tc": psi, "psi_tf": psi,
               "psi_bool": psi, "group": group}  # fmt: skip
    return pl.DataFrame(columns, schema_overrides={"group": pl.Utf8})


def _order(run: pl.DataFrame, query: str = "q1") -> list[str]:
    return run.filter(pl.col("query_id") == query).sort("rank")["doc_id"].to_list()


ATTRS = _attrs([("a", 0.0, 0.9, "M"), ("b", 1.0, 0.0, "N"), ("c", 1.0, 0.0, "N"),
                ("d", 0.5, -0.4, "F"), ("e", 1.0, 0.0, "N")])  # fmt: skip


def test_score_shift_by_hand() -> None:
    # scores 3, 2, 1: z = +1.2247, 0, -1.2247 (population std sqrt(2/3)); a has ζ 0, b and
    # c have ζ 1. λ 1: a 0.2247 > b 0 > c -1.2247 (unchanged); λ 1.5: b 0 > a -0.2753 > c.
    run = _run([("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0)])
    one = score_shift(run, ATTRS, ScoreShiftConfig(lambda_=1.0))
    assert _order(one) == ["a", "b", "c"]
    assert one.filter(pl.col("doc_id") == "a")["score"][0] == pytest.approx(
        3 / math.sqrt(6) - 1.0 + 0.0, abs=1e-12)  # z(a) = 1/sqrt(2/3) = 1.2247
    shifted = score_shift(run, ATTRS, ScoreShiftConfig(lambda_=1.5))
    assert _order(shifted) == ["b", "a", "c"]
    assert shifted["rank"].to_list() == [1, 2, 3]


def test_score_shift_lambda_zero_is_the_identity_and_ties_keep_the_base_order() -> None:
    run = _run([("q1", "d", 2.0), ("q1", "b", 2.0), ("q1", "a", 1.0), ("q2", "c", 5.0),
                ("q2", "e", 5.0)])  # fmt: skip
    same = score_shift(run, ATTRS, ScoreShiftConfig(lambda_=0.0))
    key = ["query_id", "doc_id", "rank"]
    assert same.select(key).equals(run.select(key))
    # q2's scores are equal (z = 0 both); c and e have ζ 1: a tie, the base order stays
    shifted = score_shift(run, ATTRS, ScoreShiftConfig(lambda_=0.3))
    assert _order(shifted, "q2") == ["c", "e"]
    # q1: d and b tie at z = +0.7071; d has ζ 0.5: d drops below b by 0.3·0.5
    assert _order(shifted, "q1") == ["b", "d", "a"]


def test_score_shift_by_bias_uses_the_magnitude_of_psi() -> None:
    # z: a +1, d -1 (two docs); |Ψ| a 0.9, d 0.4; λ 2: a 1 - 1.8 = -0.8 > d -1 - 0.8 = -1.8
    run = _run([("q1", "a", 1.0), ("q1", "d", 0.0)])
    cfg = ScoreShiftConfig(lambda_=2.0, attribute="bias")
    assert _order(score_shift(run, ATTRS, cfg)) == ["a", "d"]
    cfg = ScoreShiftConfig(lambda_=5.0, attribute="bias")  # a 1 - 4.5 < d -1 - 2 = -3
    assert _order(score_shift(run, ATTRS, cfg)) == ["d", "a"]


def test_score_shift_ranks_each_fold_models_list_of_a_transfer_run_apart() -> None:
    run = _run([("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0)])
    both = pl.concat([run.with_columns(pl.lit(f, pl.Int64).alias("fold")) for f in (0, 1)])
    out = score_shift(both, ATTRS, ScoreShiftConfig(lambda_=1.5))
    for fold in (0, 1):
        part = out.filter(pl.col("fold") == fold).sort("rank")
        assert part["doc_id"].to_list() == ["b", "a", "c"]
        assert part["rank"].to_list() == [1, 2, 3]


def test_fa_ir_minimum_table_is_the_binomial_quantile() -> None:
    for p in (0.3, 0.5, 0.7):
        for alpha in (0.05, 0.1):
            for k in range(1, 40):
                assert minimum(k, p, alpha) == int(binom.ppf(alpha, k, p)), (k, p, alpha)
    # FA*IR's example (p 0.5, α 0.1): the first female version is required at k = 4
    assert [minimum(k, 0.5, 0.1) for k in range(1, 9)] == [0, 0, 0, 1, 1, 1, 2, 2]


def test_fa_ir_order_by_hand() -> None:
    # four male then two female versions, p 0.5, α 0.1: m(k) = 0 0 0 1 1 1, so the first
    # female version moves to position 4; position 5 is the better of M (index 3) and F (5)
    assert fair_order([False] * 4 + [True] * 2, FairConfig()) == [0, 1, 2, 4, 3, 5]
    assert fair_order([True, False, True], FairConfig()) == [0, 1, 2]


def test_fa_ir_keeps_unlabelled_documents_in_place() -> None:
    attrs = _attrs([(f"m{i}", 0.0, 0.5, "M") for i in range(4)]
                   + [("f0", 0.0, -0.5, "F"), ("n0", 1.0, 0.0, "N")])  # fmt: skip
    run = _run([("q1", d, 10.0 - i) for i, d in enumerate(["m0", "n0", "m1", "m2", "m3", "f0"])])
    out = fa_ir(run, attrs, FairConfig())
    # F/M slots: positions 1,3,4,5,6 hold m0 m1 m2 m3 f0 → FA*IR: m0 m1 m2 f0 m3; n0 stays 2nd
    assert _order(out) == ["m0", "n0", "m1", "m2", "f0", "m3"]
    assert out.sort("rank")["score"].to_list() == [10.0, 9.0, 8.0, 7.0, 6.0, 5.0]


def test_every_post_processor_at_its_identity_setting_or_on_one_document() -> None:
    run = _run([("q1", "a", 1.0)])
    for name, record in POSTS.items():
        out = record.fn(run, ATTRS, record.config())
        assert _order(out) == ["a"], name
        assert set(out.columns) == {"query_id", "doc_id", "score", "rank"}, name


def _raw(**post: object) -> dict[str, object]:
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["post"] = post
    return raw


def test_post_params_are_loaded_into_the_processors_config() -> None:
    params = parse_params(_raw(s={"processor": "score_shift", "base": "baseline", "lambda": 0.2}))
    entry = params.post["s"]
    assert entry.config == ScoreShiftConfig(lambda_=0.2)
    assert entry.settings()["lambda"] == 0.2
    assert params.seed_runs_of("s") == params.seed_runs_of("baseline")
    assert get_post("score_shift").config is ScoreShiftConfig


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ({"processor": "score_shfit", "base": "baseline"}, "did you mean 'score_shift'"),
        ({"processor": "score_shift", "base": "baselin"}, "post.x.base.*did you mean 'baseline'"),
        ({"processor": "score_shift", "base": "baseline", "lamda": 1}, r"post.x.lamda.*did you"),
        ({"processor": "score_shift", "base": "baseline", "lambda": -1}, "post.x.lambda"),
        ({"base": "baseline"}, "post.x.processor' is required"),
        ({"processor": "fa_ir", "base": "baseline", "protected": "X"}, "post.x.protected"),
    ],
)
def test_post_params_refuse_bad_entries_naming_the_key(
    entry: dict[str, object], match: str
) -> None:
    with pytest.raises(ParamsError, match=match):
        parse_params(_raw(x=entry))


def test_a_post_entry_may_not_take_a_methods_name() -> None:
    with pytest.raises(ParamsError, match=r"post\.baseline"):
        parse_params(_raw(baseline={"processor": "score_shift", "base": "zero-shot"}))


def test_series_group_entries_by_everything_but_lambda() -> None:
    post = {"s1": {"processor": "score_shift", "base": "b", "lambda": 0.3},
            "f": {"processor": "fa_ir", "base": "b", "p": 0.5},
            "s0": {"processor": "score_shift", "base": "b", "lambda": 0.0},
            "z": {"processor": "score_shift", "base": "zero-shot", "lambda": 0.3}}  # fmt: skip
    assert series(post) == [["s0", "s1"], ["f"], ["z"]]


def _p(name: str, lam: float, f: float, mrr: float, half: float = 0.01) -> Point:
    return Point(name, lam, f, None, None, None, mrr, -half, half, False, None)


CURVE = [_p("l0", 0.0, 0.70, 0.90), _p("l1", 0.1, 0.74, 0.90), _p("l3", 0.3, 0.80, 0.88)]


def test_frontier_interpolates_between_the_bracketing_points() -> None:
    mrr, lam = frontier_at(CURVE, 0.77) or (None, None)
    assert mrr == pytest.approx(0.89) and lam == pytest.approx(0.2)
    assert frontier_at(CURVE, 0.81) is None


@pytest.mark.parametrize(
    ("method", "words"),
    [
        (_p("m", 0, 0.77, 0.905), "above the frontier"),  # 0.905 - 0.89 = +0.015 > 0.01
        (_p("m", 0, 0.77, 0.893), "on the re-ranking frontier"),
        (_p("m", 0, 0.77, 0.87), "below the frontier"),
        (_p("m", 0, 0.69, 0.95), "no fairness gain over `baseline` to place"),
        (_p("m", 0, 0.85, 0.86), "fairer than the frontier's last point"),
    ],
)
def test_placement_by_hand(method: Point, words: str) -> None:
    assert words in placement(method, CURVE, "baseline")
