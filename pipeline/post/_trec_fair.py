"""TREC Fair Ranking 2022 inference-time methods (SPEC §6.8) and their command line: a run →
the track's Task 1 and Task 2 submission files (Ekstrand, Das, Burke, Diaz, Raj, Smith,
"Overview of the TREC 2022 Fair Ranking Track", TREC 2022; metrics SPEC §4.6).

- **Task 1, greedy nDCG×AWRF** (`greedy_order`, `task1_rerank`): position by position, the
  candidate that maximises the track's score nDCG × AWRF of the prefix it completes, with the
  track's discount (`trec_fair2022.discount32` / `track_discount`), nDCG normaliser
  (`task1_ndcg`) and per-query group target (`task1_target`); AWRF = 1 − JS distance² of the
  discount-weighted mean intersectional alignment of the prefix's known pages
  (`weighted_outer_sum`, `scipy.spatial.distance.jensenshannon` as the track's `qr_awrf`).
  The prefix sums are kept incrementally, so each position costs one batch of JS distances;
  a test checks every prefix's objective against `task1_ndcg × task1_awrf`. Equal objectives
  (within 1e-12 relative) go to the earlier document of the base order: higher base score,
  then lower base rank, then smaller doc id; a candidate whose prefix has no known page or no
  target (AWRF undefined) ranks below any with a defined objective. The relevant set behind
  nDCG and the target is, by default, the base list's top ``assumed_relevant`` documents
  (the evaluation queries' qrels are unknown at submission time); ``relevant: qrels`` uses
  the judged ones (training queries, an upper bound). The documents after the first
  ``length`` follow in base order. λ has no role here; `length = 0` is the identity.
- **Task 2, Plackett–Luce policy** (`choose_temperature`, `task2_rankings`): rankings drawn
  with P ∝ exp(s̃/T) over the per-query z-scored base scores (`sample_rankings`, the sampler
  the project's Task 2 metric evaluates, seeded per query), 100 rankings of 20; T is the grid
  value with the lowest mean expected group under-exposure (`trecfair.L2UEXP`, the track's
  `under.py`) over the training queries (the command: the extract's `train` split,
  `dataset.trec_fair_2022` defaults), the smaller T on a tie (nearer the base ranking).

Why not a `PostProcessor` record: a record maps a run and the Ψ/ζ/F-M-N attributes of
`data/doc_scores.parquet` to a run and never reads qrels; these methods need the track's
multi-dimensional page alignments, the work-needed levels (`qual_cat`) and, for T, the
training queries' qrels, and they write the track's files, not a run. Hence functions plus
``python -m pipeline.post._trec_fair RUN OUT`` (reads the run, TREC text or parquet, and
`trec-fair/2022/train` through ir_datasets, `pipeline.data.trec_fair`). The module name starts
with ``_`` so the post-processor registry (`pipeline.config.collect`) skips it and no stage's
code digest holds it.

Cost: the greedy keeps one intersectional vector per candidate, so candidates × Π(groups
per dimension) floats; the dimensions of the command's default (`sub-geo` × `gender`) are
small, all eight of the track's are not (`MAX_CELLS` stops with the fix).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import polars as pl
from scipy.spatial.distance import jensenshannon

from pipeline import io
from pipeline.config import Checked, Range
from pipeline.errors import InputError
from pipeline.metrics import trec_fair2022 as tf
from pipeline.schemas import RUN

log = logging.getLogger(__name__)

MAX_CELLS = 50_000_000
"""At most candidates × intersectional groups floats held by the greedy (400 MB)."""
TIE = 1e-12
"""Relative tolerance under which two greedy objectives are equal."""
GRID = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
"""Default temperatures tried for Task 2 (on the z-scored scores)."""
TRACK_FIELDS = ("page_subcont_regions", "gender", "qual_cat")
"""The command's default ir_datasets fields: `sub-geo`, `gender` and the work-needed levels."""


@dataclass(frozen=True)
class Task1Config(Checked):
    """``length``: positions the greedy fills (the track's 500); ``relevant``: where the
    relevant set comes from (``run``: the base list's top ``assumed_relevant``; ``qrels``:
    the judged relevant documents)."""

    length: Annotated[int, Range(ge=0)] = tf.TASK1_LENGTH
    relevant: Literal["run", "qrels"] = "run"
    assumed_relevant: Annotated[int, Range(ge=1)] = 100


@dataclass(frozen=True)
class Task2Config(Checked):
    """``grid``: the temperatures tried on the training queries; ``seed`` of the sampler."""

    grid: tuple[float, ...] = GRID
    seed: int = 0


# ---------------------------------------------------------------------------------------------
# Task 1


def base_order(run: pl.DataFrame) -> pl.DataFrame:
    """One query's run in the greedy's tie order: score descending, rank, doc id."""
    return run.sort(["score", "rank", "doc_id"], descending=[True, False, False])


def candidate_vectors(dims: tf.TrackDims, docs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(vectors, known)``: each document's flattened intersectional alignment (zeros for a
    page without one) and whether it has one (`TrackDims.known`)."""
    known = dims.known(docs)
    cells = math.prod(dims.shape)
    if len(docs) * cells > MAX_CELLS:
        raise InputError(
            f"trecfair greedy: {len(docs)} candidates × {cells} intersectional groups of "
            f"{list(dims.names)} exceed {MAX_CELLS:,} floats; pass fewer --dimensions"
        )
    vectors = np.zeros((len(docs), cells))
    for i in np.flatnonzero(known):
        vectors[i] = tf.weighted_outer_sum(dims.rows([docs[int(i)]]), np.ones(1)).ravel()
    return vectors, known


def greedy_order(
    docs: Sequence[str],
    relevant: Sequence[str],
    dims: tf.TrackDims,
    length: int = tf.TASK1_LENGTH,
    target_len: int = tf.TASK1_LENGTH,
) -> list[int]:
    """Indices of ``docs`` (given in base order) in the greedy's order (module docstring):
    the first ``min(length, len(docs))`` chosen one by one, the rest in base order."""
    n_out = min(length, len(docs))
    rel_set = set(relevant)
    target = tf.task1_target(dims, list(relevant)).ravel()
    if n_out == 0 or not rel_set or not np.isfinite(target).all():
        return list(range(len(docs)))
    vectors, known = candidate_vectors(dims, docs)
    gains = np.array([d in rel_set for d in docs], dtype=np.float64)
    disc = tf.track_discount(max(n_out, 1))  # the same float32 values as discount32
    ideal = float(tf.discount32(target_len)[: min(target_len, len(rel_set))].sum())
    remaining = list(range(len(docs)))
    chosen: list[int] = []
    dcg, run_sum, weight = 0.0, np.zeros(vectors.shape[1]), 0.0
    for pos in range(n_out):
        rem = np.array(remaining)
        d = disc[pos]
        ndcg = (dcg + d * gains[rem]) / ideal
        mass = weight + d * known[rem]
        sums = run_sum[None, :] + d * vectors[rem]
        ok = mass > 0
        awrf = np.full(rem.size, np.nan)
        if ok.any():
            dist = jensenshannon(sums[ok], np.broadcast_to(target, sums[ok].shape), axis=1)
            awrf[ok] = 1.0 - dist**2
        objective = np.where(np.isfinite(awrf), ndcg * awrf, -np.inf)
        best = objective.max()
        if np.isfinite(best):
            pick = int(np.flatnonzero(objective >= best - TIE * max(1.0, abs(best)))[0])
        else:
            pick = 0  # no defined objective: the base order
        j = remaining.pop(pick)
        chosen.append(j)
        dcg += d * gains[j]
        run_sum += d * vectors[j]
        weight += d * known[j]
    return chosen + remaining


def task1_rerank(
    run: pl.DataFrame, qrels: pl.DataFrame | None, dims: tf.TrackDims, cfg: Task1Config
) -> pl.DataFrame:
    """``query_id, doc_id, score, rank``: each query re-ranked by `greedy_order`; scores are
    the base list's scores in rank order (score and rank agree)."""
    judged = tf.relevant_docs(qrels) if qrels is not None else {}
    parts = []
    for (qid,), part in run.group_by("query_id", maintain_order=True):
        part = base_order(part)
        docs = part["doc_id"].to_list()
        if cfg.relevant == "qrels":
            relevant = judged.get(str(qid), [])
        else:
            relevant = docs[: cfg.assumed_relevant]
        order = greedy_order(docs, relevant, dims, cfg.length)
        parts.append(
            part[order]
            .select("query_id", "doc_id")
            .with_columns(
                part["score"].alias("score"),
                pl.int_range(1, part.height + 1, dtype=pl.Int64).alias("rank"),
            )
        )
    return pl.concat(parts).sort("query_id", "rank", maintain_order=True)


# ---------------------------------------------------------------------------------------------
# Task 2


def task2_rankings(run: pl.DataFrame, temperature: float, seed: int = 0) -> pl.DataFrame:
    """``query_id, rep_number, rank, doc_id``: 100 Plackett–Luce rankings of 20 per query,
    P ∝ exp(s̃ / T) over the z-scored scores (`trec_fair2022.sample_rankings`)."""
    return tf.sample_rankings(run, tf.TASK2_RANKINGS, tf.TASK2_LENGTH, temperature, seed)


def temperature_losses(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    quality: pl.DataFrame,
    dims: tf.TrackDims,
    cfg: Task2Config,
) -> pl.DataFrame:
    """``temperature, L2UEXP, queries``: per grid value, the mean expected group
    under-exposure (`trec_fair2022.task2_scores`) over the queries of ``run`` that have a
    target, and how many those are."""
    rows = []
    for temp in sorted(cfg.grid):
        scores = tf.task2_scores(task2_rankings(run, temp, cfg.seed), qrels, quality, dims)
        under = scores[f"{tf.PREFIX}L2UEXP"].drop_nulls()
        rows.append({"temperature": temp, "L2UEXP": under.mean(), "queries": under.len()})
    return pl.DataFrame(rows, schema={"temperature": pl.Float64, "L2UEXP": pl.Float64,
                                      "queries": pl.Int64})  # fmt: skip


def choose_temperature(losses: pl.DataFrame) -> float:
    """The grid value of least mean under-exposure; the smaller one on a tie."""
    valid = losses.filter(pl.col("L2UEXP").is_not_null())
    if valid.height == 0:
        raise InputError(
            "trecfair Task 2: no training query has a target (relevant pages with a `qual_cat` "
            "work level); add qual_cat to the dimensions and check the training qrels"
        )
    return float(valid.sort("L2UEXP", "temperature")["temperature"][0])


# ---------------------------------------------------------------------------------------------
# command line


def read_run(path: Path) -> pl.DataFrame:
    """A run as a TREC text file or a parquet table with the run columns."""
    if path.suffix == ".parquet":
        return io.read_table(path, RUN)
    return io.read_trec_run(path)


def write_files(
    run: pl.DataFrame,
    data: tf.TrackDims,
    qrels: pl.DataFrame,
    quality: pl.DataFrame,
    train: Sequence[str],
    out: Path,
    cfg1: Task1Config,
    cfg2: Task2Config,
) -> dict[str, object]:
    """Write ``out/trec_fair_task1.tsv`` (greedy) and ``out/trec_fair_task2.tsv`` (the
    policy at the chosen T) and validate them (`trec_fair_submission`); a query with fewer
    candidates than the track's lengths is written and validated at its length (logged)."""
    from pipeline.data import trec_fair_submission as sub

    task1, task2 = out / "trec_fair_task1.tsv", out / "trec_fair_task2.tsv"
    queries = run["query_id"].unique().to_list()
    n_min = min(run.group_by("query_id").len()["len"].to_list(), default=0)
    length1 = min(tf.TASK1_LENGTH, n_min)
    if length1 < tf.TASK1_LENGTH:
        log.warning("Task 1: a query has only %d candidates; lists of %d", n_min, length1)
    sub.write_task1(task1_rerank(run, qrels, data, cfg1), task1, length1)
    losses = temperature_losses(run.filter(pl.col("query_id").is_in(list(train))), qrels,
                                quality, data, cfg2)  # fmt: skip
    temp = choose_temperature(losses)
    log.info("Task 2: T = %g (mean L2UEXP per T on %d training queries:\n%s)",
             temp, len(train), losses)  # fmt: skip
    sub.write_task2(task2_rankings(run, temp, cfg2.seed), task2)
    sub.validate_task1(task1, queries, length1)
    sub.validate_task2(task2, queries, length=min(tf.TASK2_LENGTH, n_min))
    return {"task1": str(task1), "task2": str(task2), "temperature": temp,
            "losses": losses.to_dicts()}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    from pipeline.data.trec_fair import TrecFairConfig, extract_trec_fair

    ap = argparse.ArgumentParser(prog="python -m pipeline.post._trec_fair", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("run", type=Path, help="the base run (TREC text, or .parquet)")
    ap.add_argument("out", type=Path, help="folder for the two submission files")
    ap.add_argument(
        "--dimensions",
        nargs="+",
        default=list(TRACK_FIELDS),
        help="FairTrec2022Doc fields read (qual_cat: Task 2's work levels)",
    )
    ap.add_argument(
        "--docs-per-query",
        type=int,
        default=None,
        help="sampled relevant articles per query (default: all)",
    )
    ap.add_argument("--relevant", choices=["run", "qrels"], default="run")
    ap.add_argument("--assumed-relevant", type=int, default=Task1Config.assumed_relevant)
    ap.add_argument("--grid", type=float, nargs="+", default=list(Task2Config.grid))
    ap.add_argument("--seed", type=int, default=Task2Config.seed)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        cfg1 = Task1Config(relevant=args.relevant, assumed_relevant=args.assumed_relevant)
        cfg2 = Task2Config(grid=tuple(args.grid), seed=args.seed)
        data = extract_trec_fair(TrecFairConfig(dimensions=tuple(args.dimensions),
                                                docs_per_query=args.docs_per_query))  # fmt: skip
        run = read_run(args.run)
        dims = tf.dims_of(data.alignments, None)
        train = data.queries.filter(pl.col("split") == "train")["query_id"].to_list()
        result = write_files(run, dims, data.qrels, tf.quality_table(data.alignments), train,
                             args.out, cfg1, cfg2)  # fmt: skip
    except (InputError, io.ArtifactError) as e:
        log.error("%s", e)
        return 1
    io.write_json(result, args.out / "trec_fair_post.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
