"""TREC Fair 2022 inference-time methods (`pipeline.post._trec_fair`, SPEC §6.8): the Task 1
greedy nDCG×AWRF re-ranker and the Task 2 Plackett–Luce policy, on hand-computed examples
and end to end on the real-format miniature files read through ir_datasets
(`tests/irds_miniature.py`), checked with the track's submission validator.

Hand examples use one raw dimension `alpha` (groups x, y; no background mixing), so a query's
Task 1 target is the mean alignment of its relevant documents.
"""

from __future__ import annotations

import math
import os
import random
import re
import subprocess
import sys
from itertools import permutations
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline import io
from pipeline.data import trec_fair_submission as sub
from pipeline.data.trec_fair import TrecFair, TrecFairConfig, extract_trec_fair
from pipeline.metrics import trec_fair2022 as tf
from pipeline.post import _trec_fair as tfp
from pipeline.report import docs
from tests.conftest import Miniature, NoNetwork

ROOT = Path(__file__).resolve().parents[2]
D3 = 1 / math.log2(3)  # the discount at rank 3 (ranks 1 and 2 both have 1)
IDEAL3 = 1 + 1 + D3  # nDCG's ideal DCG with three relevant documents


def alignments(groups: dict[str, str], quality: dict[str, str] | None = None) -> pl.DataFrame:
    rows = [(d, "alpha", g, 1.0) for d, g in groups.items()]
    rows += [(d, "qual_cat", q, 1.0) for d, q in (quality or {}).items()]
    return pl.DataFrame(
        rows,
        schema={"doc_id": pl.Utf8, "dimension": pl.Utf8, "group": pl.Utf8, "weight": pl.Float64},
        orient="row",
    )


def dims_of(groups: dict[str, str]) -> tf.TrackDims:
    return tf.build_dims(alignments(groups), {})


def run_of(scores: dict[str, float], qid: str = "1") -> pl.DataFrame:
    ordered = sorted(scores, key=lambda d: -scores[d])
    return pl.DataFrame(
        {"query_id": [qid] * len(ordered), "doc_id": ordered,
         "score": [scores[d] for d in ordered], "rank": list(range(1, len(ordered) + 1))}
    )  # fmt: skip


def jsd(p: list[float], q: list[float]) -> float:
    m = [(a + b) / 2 for a, b in zip(p, q, strict=True)]
    kl = lambda x, y: sum(a * math.log(a / b) for a, b in zip(x, y, strict=True) if a > 0)  # noqa: E731
    return (kl(p, m) + kl(q, m)) / 2


def objective(prefix: list[str], relevant: list[str], dims: tf.TrackDims) -> float:
    """nDCG × AWRF of a prefix, by the project's Task 1 metric functions."""
    target = tf.task1_target(dims, relevant)
    return tf.task1_ndcg(prefix, set(relevant)) * tf.task1_awrf(prefix, dims, target)


# ------------------------------------------------------------------------------- Task 1

# Base order a, b, c, d; a, b, c relevant; groups a x, b x, c y, d x. Target = mean alignment
# of the relevant documents = (2/3, 1/3) over (x, y).
GROUPS = {"a": "x", "b": "x", "c": "y", "d": "x"}
REL = ["a", "b", "c"]


def test_greedy_picks_by_hand() -> None:
    dims = dims_of(GROUPS)
    target = [2 / 3, 1 / 3]
    # rank 1 (discount 1): a or b: nDCG 1/IDEAL3, prefix distribution (1, 0); c: (0, 1); d: nDCG 0
    r1_ab = (1 / IDEAL3) * (1 - jsd([1, 0], target))  # 0.3298: a and b tie → a (base order)
    r1_c = (1 / IDEAL3) * (1 - jsd([0, 1], target))  # 0.2591
    assert r1_ab == pytest.approx(0.32981, abs=1e-5) and r1_c == pytest.approx(0.25913, abs=1e-5)
    assert objective(["a"], REL, dims) == pytest.approx(r1_ab, rel=1e-6)
    assert objective(["b"], REL, dims) == objective(["a"], REL, dims)
    assert objective(["c"], REL, dims) == pytest.approx(r1_c, rel=1e-6)
    # rank 2 (discount 1): after a, b gives (1, 0) → 0.6596; c gives (½, ½) → 0.7493; d gives
    # (1, 0) with nDCG 1/IDEAL3 → 0.3298. The greedy takes c (the base order would take b).
    r2_b = (2 / IDEAL3) * (1 - jsd([1, 0], target))
    r2_c = (2 / IDEAL3) * (1 - jsd([0.5, 0.5], target))
    assert (r2_b, r2_c) == (pytest.approx(0.65961, abs=1e-5), pytest.approx(0.74927, abs=1e-5))
    assert objective(["a", "c"], REL, dims) == pytest.approx(r2_c, rel=1e-6)
    # rank 3 (discount D3): b completes nDCG = 1 with distribution (1 + D3, 1)/(2 + D3) →
    # 0.9988; d has nDCG 2/IDEAL3 = 0.76 < that. Then d.
    r3_b = 1 - jsd([(1 + D3) / (2 + D3), 1 / (2 + D3)], target)
    assert r3_b == pytest.approx(0.99881, abs=1e-5)
    assert objective(["a", "c", "b"], REL, dims) == pytest.approx(r3_b, rel=1e-6)
    assert tfp.greedy_order(list("abcd"), REL, dims) == [0, 2, 1, 3]  # a, c, b, d
    # the whole list's nDCG × AWRF is at least the base ranking's (0.99989 ≥ 0.98882)
    assert objective(list("acbd"), REL, dims) >= objective(list("abcd"), REL, dims)
    assert objective(list("abcd"), REL, dims) == pytest.approx(0.98882, abs=1e-5)


def test_the_greedy_is_myopic() -> None:
    """The limitation docs/decisions.md states: with d in y instead of x, the greedy still
    takes a, c, b (its first three choices do not look at d), and the non-relevant d at rank 4
    adds y exposure: the full list scores 0.98894 < the base order's 0.99957."""
    dims = dims_of(GROUPS | {"d": "y"})
    assert tfp.greedy_order(list("abcd"), REL, dims) == [0, 2, 1, 3]
    assert objective(list("acbd"), REL, dims) == pytest.approx(0.98894, abs=1e-5)
    assert objective(list("abcd"), REL, dims) == pytest.approx(0.99957, abs=1e-5)


def test_greedy_objective_is_the_metrics_on_every_prefix() -> None:
    """The greedy's incremental sums give, at each rank, the choice that maximises
    `task1_ndcg × task1_awrf` (brute force over the remaining documents)."""
    rng = random.Random(5)
    groups = {f"d{i}": rng.choice("xyz") for i in range(12)}
    groups |= {"u1": "x"}  # u2 has no alignment (an unknown page)
    docs = [*groups, "u2"]
    rng.shuffle(docs)
    relevant = [d for d in docs if rng.random() < 0.5] + ["u2"]
    dims = dims_of(groups)
    order = [docs[i] for i in tfp.greedy_order(docs, relevant, dims)]
    for k in range(1, len(order) + 1):
        scores = {d: objective([*order[: k - 1], d], relevant, dims) for d in order[k - 1 :]}
        finite = {d: v for d, v in scores.items() if np.isfinite(v)}
        assert scores[order[k - 1]] == pytest.approx(max(finite.values()), rel=1e-9), k


def test_ties_follow_the_base_order() -> None:
    """a and b are interchangeable (same group, both relevant): whichever the base run puts
    first (higher score; equal scores: lower rank) comes first."""
    dims = dims_of(GROUPS)
    cfg = tfp.Task1Config(relevant="qrels")
    qrels = pl.DataFrame({"query_id": ["1"] * 3, "doc_id": REL, "relevance": [1, 1, 1]})
    out = tfp.task1_rerank(run_of({"a": 4, "b": 3, "c": 2, "d": 1}), qrels, dims, cfg)
    assert out["doc_id"].to_list() == ["a", "c", "b", "d"]
    out = tfp.task1_rerank(run_of({"b": 4, "a": 3, "c": 2, "d": 1}), qrels, dims, cfg)
    assert out["doc_id"].to_list() == ["b", "c", "a", "d"]
    equal = run_of({"b": 1, "a": 1, "c": 1, "d": 1})  # ranks b, a, c, d
    assert tfp.task1_rerank(equal, qrels, dims, cfg)["doc_id"].to_list() == ["b", "c", "a", "d"]
    # scores stay the base list's in rank order; ranks 1..n
    assert out["score"].to_list() == [4.0, 3.0, 2.0, 1.0] and out["rank"].to_list() == [1, 2, 3, 4]


def test_length_zero_and_no_relevant_are_the_identity() -> None:
    dims = dims_of(GROUPS)
    run = run_of({"a": 4, "b": 3, "c": 2, "d": 1})
    same = tfp.task1_rerank(run, None, dims, tfp.Task1Config(length=0))
    assert same.equals(run)
    assert tfp.greedy_order(list("abcd"), [], dims) == [0, 1, 2, 3]
    # the default relevant set: the base list's top `assumed_relevant` (here a, b, c)
    assumed = tfp.task1_rerank(run, None, dims, tfp.Task1Config(assumed_relevant=3))
    assert assumed["doc_id"].to_list() == ["a", "c", "b", "d"]


def test_too_many_intersectional_cells_stop_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tfp, "MAX_CELLS", 3)
    with pytest.raises(tfp.InputError, match="pass fewer --dimensions"):
        tfp.greedy_order(list("abcd"), REL, dims_of(GROUPS))


# ------------------------------------------------------------------------------- Task 2


def test_t_to_zero_is_the_deterministic_sort() -> None:
    run = run_of({f"d{i:02d}": float(30 - i) for i in range(30)})
    rankings = tfp.task2_rankings(run, 1e-6, seed=7)
    assert rankings["rep_number"].n_unique() == tf.TASK2_RANKINGS
    for (_,), rep in rankings.group_by("rep_number"):
        assert rep.sort("rank")["doc_id"].to_list() == run["doc_id"].head(20).to_list()


def test_sampling_frequencies_match_plackett_luce() -> None:
    """Scores 1, 0, −1 → z = ±√1.5, 0; at T = 0.8 each of the 6 orders has the Plackett–Luce
    probability Π p(first)·p(next | rest); over n = 20,000 draws every frequency is within
    4 binomial SDs √(p(1 − p)/n) (≤ 0.0135 here)."""
    run = run_of({"a": 1.0, "b": 0.0, "c": -1.0})
    temp, n = 0.8, 20_000
    w = {"a": math.exp(math.sqrt(1.5) / temp), "b": 1.0, "c": math.exp(-math.sqrt(1.5) / temp)}
    drawn = tf.sample_rankings(run, n, 3, temp, seed=11)  # the sampler task2_rankings uses
    orders = (
        drawn.sort("rep_number", "rank")
        .group_by("rep_number", maintain_order=True)
        .agg(pl.col("doc_id").str.join(""))["doc_id"]
        .to_list()
    )
    for perm in permutations("abc"):
        x, y, z = perm
        p = w[x] / (w[x] + w[y] + w[z]) * w[y] / (w[y] + w[z])
        freq = orders.count("".join(perm)) / n
        assert abs(freq - p) <= 4 * math.sqrt(p * (1 - p) / n), (perm, freq, p)


def task2_case(quality: dict[str, str], groups: dict[str, str]) -> pl.DataFrame:
    """The grid's mean L2UEXP of a one-query run: scores a 3, b 2, c 1, all relevant."""
    dims = tf.build_dims(alignments(groups), {})
    qual = tf.quality_table(alignments({}, quality))
    qrels = pl.DataFrame({"query_id": ["1"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1] * 3})
    run = run_of({"a": 3.0, "b": 2.0, "c": 1.0})
    return tfp.temperature_losses(run, qrels, qual, dims, tfp.Task2Config(grid=(100.0, 1.0, 0.01)))


def test_temperature_choice_by_hand() -> None:
    """Three relevant documents only, so every ranking shows all three (ranks 1, 2, 3:
    discounts 1, 1, D3) and page exposure is all the system's.

    (i) Work levels Stub, Start, C in score order: the target exposures are 1, 1, D3, exactly
    what the deterministic ranking gives, so T = 0.01 has no under-exposure and any random
    order some (a or b at rank 3 in a draw) → the smallest T.
    (ii) All B: each target is 1/3 of the total; the deterministic ranking gives c only
    D3/(2 + D3) = 0.2398, under by 1/3 − 0.2398 = 0.0935, g = (0, 0.0935) on (x, y) →
    L2UEXP 0.00874; a near-uniform policy (T = 100) nearly none → the largest T."""
    groups = {"a": "x", "b": "x", "c": "y"}
    one = task2_case({"a": "Stub", "b": "Start", "c": "C"}, groups)
    assert one.sort("temperature")["L2UEXP"][0] == pytest.approx(0.0, abs=1e-12)
    assert one["L2UEXP"].min() == one.sort("temperature")["L2UEXP"][0]
    assert tfp.choose_temperature(one) == 0.01
    two = task2_case({"a": "B", "b": "B", "c": "B"}, groups)
    det = two.filter(pl.col("temperature") == 0.01)["L2UEXP"][0]
    assert det == pytest.approx((1 / 3 - D3 / (2 + D3)) ** 2, rel=1e-6)
    assert tfp.choose_temperature(two) == 100.0


def test_equal_under_exposure_takes_the_smaller_temperature() -> None:
    losses = pl.DataFrame({"temperature": [0.5, 2.0, 1.0], "L2UEXP": [0.2, 0.1, 0.1],
                           "queries": [3, 3, 3]})  # fmt: skip
    assert tfp.choose_temperature(losses) == 1.0
    with pytest.raises(tfp.InputError, match="no training query has a target"):
        tfp.choose_temperature(losses.with_columns(pl.lit(None, pl.Float64).alias("L2UEXP")))


# ------------------------------------------------------------------- on the miniature


def miniature_run(corpus: list[str], queries: list[str], relevant: set[tuple[str, str]]
                  ) -> pl.DataFrame:  # fmt: skip
    """Every corpus article for every query: score = 1 for a relevant one + seeded noise."""
    rng = random.Random(39)
    rows = [(q, d, (1.0 if (q, d) in relevant else 0.0) + rng.gauss(0, 0.7))
            for q in queries for d in corpus]  # fmt: skip
    run = pl.DataFrame(rows, schema={"query_id": pl.Utf8, "doc_id": pl.Utf8, "score": pl.Float64},
                       orient="row")  # fmt: skip
    return run.sort(["query_id", "score"], descending=[False, True]).with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query_id").alias("rank")
    )


@pytest.fixture(scope="module")
def mini_data(miniature: Miniature) -> tuple[TrecFair, pl.DataFrame]:
    data = extract_trec_fair(TrecFairConfig(dimensions=tfp.TRACK_FIELDS, docs_per_query=None))
    judged = set(zip(data.qrels["query_id"], data.qrels["doc_id"], strict=True))
    run = miniature_run(data.corpus["doc_id"].to_list(),
                        data.queries["query_id"].to_list(), judged)  # fmt: skip
    return data, run


def test_both_files_on_the_miniature_are_valid_and_read_back(
    mini_data: tuple[TrecFair, pl.DataFrame], tmp_path: Path, no_network: NoNetwork
) -> None:
    """The command (in-process) on the ir_datasets miniature: Task 1 and Task 2 files that the
    track's validator rules accept, read back by the project's Task 1 / Task 2 metrics. The
    miniature has 400 articles, so a Task 1 list holds every candidate (< the track's 500)
    and is validated at that length; Task 2 is the track's 100 × 20."""
    data, run = mini_data
    run_path = tmp_path / "run.trec"
    io.write_trec_run(run, run_path, "base")
    assert tfp.main([str(run_path), str(tmp_path / "out"), "--relevant", "qrels"]) == 0
    task1, task2 = (
        tmp_path / "out" / "trec_fair_task1.tsv",
        tmp_path / "out" / "trec_fair_task2.tsv",
    )
    queries = data.queries["query_id"].to_list()
    n = run.group_by("query_id").len()["len"].min()
    back1 = sub.validate_task1(task1, queries, length=n)
    back2 = sub.validate_task2(task2, queries)
    assert back2.height == len(queries) * tf.TASK2_RANKINGS * tf.TASK2_LENGTH
    # the project's metrics read the files back
    alignments, qrels = data.alignments, data.qrels
    dims = tf.dims_of(alignments, None)
    greedy = tf.task1_scores(back1, qrels, dims)
    base = tf.task1_scores(run, qrels, dims)
    assert greedy.height == len(queries) and greedy["trecfair.Score"].null_count() == 0
    # with the judged relevant set the greedy improves the track's score over the base run
    assert greedy["trecfair.Score"].mean() >= base["trecfair.Score"].mean()
    exposure = tf.task2_scores(back2, qrels, tf.quality_table(alignments), dims)
    assert exposure["trecfair.L2UEXP"].null_count() == 0
    chosen = io.read_json(tmp_path / "out" / "trec_fair_post.json")
    assert chosen["temperature"] in tfp.GRID
    # the chosen T is the grid's least mean under-exposure on the training queries
    best = min(chosen["losses"], key=lambda r: (r["L2UEXP"], r["temperature"]))
    assert chosen["temperature"] == best["temperature"]
    assert tfp.main([str(run_path), str(tmp_path / "again"), "--relevant", "qrels"]) == 0
    for name in ("trec_fair_task1.tsv", "trec_fair_task2.tsv"):  # seeded: the same bytes
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "out" / name).read_bytes()


def documented_command() -> str:
    blocks = [b for b in docs.parse(ROOT / "docs" / "pipeline.md")
              if b.kind == "tested-by" and b.name and b.name.endswith(
                  "::test_the_documented_command_writes_valid_files")]  # fmt: skip
    assert len(blocks) == 1, "docs/pipeline.md: the TREC Fair block is missing"
    return blocks[0].text.strip()


def test_the_documented_command_writes_valid_files(
    mini_data: tuple[TrecFair, pl.DataFrame], tmp_path: Path, no_network: NoNetwork
) -> None:
    """docs/pipeline.md's command, as written, in a folder holding `run.trec`, offline."""
    data, run = mini_data
    command = documented_command()
    assert re.fullmatch(r"python -m pipeline\.post\._trec_fair \S+ \S+( --\S+( \S+)?)*", command)
    io.write_trec_run(run, tmp_path / "run.trec", "base")
    env = {**os.environ, **no_network.env,
           "PYTHONPATH": os.pathsep.join([no_network.env["PYTHONPATH"], str(ROOT)])}  # fmt: skip
    args = command.split()
    proc = subprocess.run([sys.executable, *args[1:]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / args[4]
    queries = data.queries["query_id"].to_list()
    sub.validate_task1(out / "trec_fair_task1.tsv", queries, length=run.height // len(queries))
    sub.validate_task2(out / "trec_fair_task2.tsv", queries)
