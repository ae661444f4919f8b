"""TREC Fair Ranking 2022 submission files (seed 004, §2 and §3.6) and their validator.

- Task 1: tab-separated `id  page_id`, rows in rank order, 500 articles per query.
- Task 2: tab-separated `id  rep_number  page_id`, 100 rankings (rep_number 1..100) of 20
  articles per query, each ranking's rows in rank order.

Both files start with a header line (`id ...`), which the track's reader skips
(`wptrec/trecdata.py`, `scan_runs`: a line whose first field is `id`); the reader infers
ranks from the line order and restarts them when the query (and for Task 2 the repetition)
changes, so a query's rows (and a repetition's) must be contiguous. Ids must be integers
(the reader casts them with `int`). Writes are atomic (`pipeline.io.write_text`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from pipeline import io
from pipeline.metrics.trec_fair2022 import (
    TASK1_LENGTH,
    TASK2_LENGTH,
    TASK2_RANKINGS,
    sample_rankings,
)

log = logging.getLogger(__name__)

TASK1_HEADER = ("id", "page_id")
TASK2_HEADER = ("id", "rep_number", "page_id")


class SubmissionError(io.ArtifactError):
    """A submission file does not follow the track's format."""


def task1_rows(run: pl.DataFrame, length: int = TASK1_LENGTH) -> pl.DataFrame:
    """`query_id, doc_id` of each query's top `length` run rows, in query then rank order."""
    ranked = run.sort("query_id", "rank").group_by("query_id", maintain_order=True).head(length)
    short = ranked.group_by("query_id").len().filter(pl.col("len") < length)
    if short.height:
        log.warning(
            "Task 1 submission: %d queries have fewer than %d documents (first %s: %d)",
            short.height, length, short["query_id"][0], short["len"][0],
        )  # fmt: skip
    return ranked.select("query_id", "doc_id")


def write_task1(run: pl.DataFrame, path: str | Path, length: int = TASK1_LENGTH) -> None:
    """Write the Task 1 file `id<TAB>page_id` (header + top `length` per query)."""
    rows = task1_rows(run, length)
    lines = ["\t".join(TASK1_HEADER)]
    lines += [f"{q}\t{d}" for q, d in rows.iter_rows()]
    io.write_text("\n".join(lines) + "\n", path)


def write_task2(rankings: pl.DataFrame, path: str | Path) -> None:
    """Write the Task 2 file `id<TAB>rep_number<TAB>page_id` from `query_id, rep_number, rank,
    doc_id` rankings (e.g. `pipeline.metrics.trec_fair2022.sample_rankings`)."""
    ordered = rankings.sort("query_id", "rep_number", "rank")
    lines = ["\t".join(TASK2_HEADER)]
    lines += [
        f"{q}\t{r}\t{d}"
        for q, r, d in ordered.select("query_id", "rep_number", "doc_id").iter_rows()
    ]
    io.write_text("\n".join(lines) + "\n", path)


def _read_lines(path: str | Path, n_fields: int, header: tuple[str, ...]) -> list[list[str]]:
    p = Path(path)
    if not p.is_file():
        raise SubmissionError(f"{p}: submission file not found")
    rows: list[list[str]] = []
    for lno, line in enumerate(io.read_text(p).splitlines(), start=1):
        fields = line.split("\t")
        if lno == 1 and fields[0] == "id":
            if tuple(fields) != header:
                raise SubmissionError(f"{p}: header {fields} is not {list(header)} (seed 004 §3.6)")
            continue
        if len(fields) != n_fields:
            raise SubmissionError(
                f"{p}:{lno}: {len(fields)} tab-separated fields, expected {n_fields} "
                f"({' '.join(header)}): {line!r}"
            )
        if not all(f.strip().isdigit() for f in fields):
            raise SubmissionError(
                f"{p}:{lno}: every field must be an integer id (the track reads them with "
                f"int()): {line!r}"
            )
        rows.append([str(lno), *fields])
    if not rows:
        raise SubmissionError(f"{p}: no rows")
    return rows


def _check_contiguous(p: Path, keys: list[str], what: str) -> None:
    seen: set[str] = set()
    prev = None
    for key in keys:
        if key != prev:
            if key in seen:
                raise SubmissionError(
                    f"{p}: rows of {what} {key} are not contiguous; the track infers ranks "
                    "from the line order, so write each one's rows together"
                )
            seen.add(key)
            prev = key


def _check_queries(p: Path, found: list[str], queries: Iterable[str] | None) -> None:
    if queries is None:
        return
    expected = {str(q) for q in queries}
    missing = sorted(expected - set(found))
    extra = sorted(set(found) - expected)
    if missing or extra:
        raise SubmissionError(
            f"{p}: queries missing {missing[:5]} ({len(missing)}), unexpected {extra[:5]} "
            f"({len(extra)})"
        )


def read_task1(path: str | Path) -> pl.DataFrame:
    """`query_id, doc_id, rank` of a Task 1 file (ranks from the line order, as the track)."""
    rows = _read_lines(path, 2, TASK1_HEADER)
    df = pl.DataFrame(
        {"query_id": [r[1] for r in rows], "doc_id": [r[2] for r in rows]},
        schema={"query_id": pl.Utf8, "doc_id": pl.Utf8},
    )
    return df.with_columns(rank=pl.int_range(1, pl.len() + 1).over("query_id").cast(pl.Int64))


def read_task2(path: str | Path) -> pl.DataFrame:
    """`query_id, rep_number, rank, doc_id` of a Task 2 file."""
    rows = _read_lines(path, 3, TASK2_HEADER)
    df = pl.DataFrame(
        {
            "query_id": [r[1] for r in rows],
            "rep_number": [int(r[2]) for r in rows],
            "doc_id": [r[3] for r in rows],
        },
        schema={"query_id": pl.Utf8, "rep_number": pl.Int64, "doc_id": pl.Utf8},
    )
    rank = pl.int_range(1, pl.len() + 1).over("query_id", "rep_number").cast(pl.Int64)
    return df.with_columns(rank=rank).select("query_id", "rep_number", "rank", "doc_id")


def validate_task1(
    path: str | Path, queries: Iterable[str] | None = None, length: int = TASK1_LENGTH
) -> pl.DataFrame:
    """Check a Task 1 file: header, 2 integer fields a line, each query's rows contiguous,
    exactly `length` distinct articles per query, the expected queries (when given).
    Returns the rows read (`read_task1`); raises `SubmissionError` naming the line or query."""
    p = Path(path)
    df = read_task1(p)
    _check_contiguous(p, df["query_id"].to_list(), "query")
    counts = df.group_by("query_id", maintain_order=True).agg(
        pl.len().alias("n"), pl.col("doc_id").n_unique().alias("distinct")
    )
    dup = counts.filter(pl.col("n") != pl.col("distinct"))
    if dup.height:
        raise SubmissionError(f"{p}: query {dup['query_id'][0]} lists an article twice")
    wrong = counts.filter(pl.col("n") != length)
    if wrong.height:
        raise SubmissionError(
            f"{p}: query {wrong['query_id'][0]} has {wrong['n'][0]} articles, expected {length} "
            f"({wrong.height} such queries)"
        )
    _check_queries(p, counts["query_id"].to_list(), queries)
    return df


def validate_task2(
    path: str | Path,
    queries: Iterable[str] | None = None,
    n_rankings: int = TASK2_RANKINGS,
    length: int = TASK2_LENGTH,
) -> pl.DataFrame:
    """Check a Task 2 file: header, 3 integer fields a line, rows of a query and of a ranking
    contiguous, rep_number exactly 1..`n_rankings` per query, `length` distinct articles per
    ranking, the expected queries (when given). Returns the rows read (`read_task2`)."""
    p = Path(path)
    df = read_task2(p)
    _check_contiguous(p, df["query_id"].to_list(), "query")
    keys = [f"{q}/{r}" for q, r in df.select("query_id", "rep_number").iter_rows()]
    _check_contiguous(p, keys, "query/rep_number")
    per_rank = df.group_by("query_id", "rep_number", maintain_order=True).agg(
        pl.len().alias("n"), pl.col("doc_id").n_unique().alias("distinct")
    )
    dup = per_rank.filter(pl.col("n") != pl.col("distinct"))
    if dup.height:
        raise SubmissionError(
            f"{p}: query {dup['query_id'][0]} ranking {dup['rep_number'][0]} lists an article twice"
        )
    wrong = per_rank.filter(pl.col("n") != length)
    if wrong.height:
        raise SubmissionError(
            f"{p}: query {wrong['query_id'][0]} ranking {wrong['rep_number'][0]} has "
            f"{wrong['n'][0]} articles, expected {length}"
        )
    reps = per_rank.group_by("query_id", maintain_order=True).agg(pl.col("rep_number").sort())
    expected = list(range(1, n_rankings + 1))
    for qid, got in reps.iter_rows():
        if list(got) != expected:
            raise SubmissionError(
                f"{p}: query {qid} has rep_number {sorted(set(got))[:3]}… ({len(got)} "
                f"rankings), expected exactly 1..{n_rankings}"
            )
    _check_queries(p, reps["query_id"].to_list(), queries)
    return df


def write_submissions(
    run: pl.DataFrame, folder: str | Path, *, temperature: float = 1.0, seed: int = 0
) -> tuple[Path, Path]:
    """Write and validate `trec_fair_task1.tsv` (top 500 of `run` per query) and
    `trec_fair_task2.tsv` (100 Plackett-Luce rankings of 20 per query, the rankings
    `trec_fair_metrics` evaluates: same sampler, temperature and seed) under `folder`.
    The files are validated against the track's format when every query has at least 500
    (Task 1) / 20 (Task 2) candidates; otherwise the shorter lists are written and logged."""
    out = Path(folder)
    task1, task2 = out / "trec_fair_task1.tsv", out / "trec_fair_task2.tsv"
    write_task1(run, task1)
    write_task2(sample_rankings(run, TASK2_RANKINGS, TASK2_LENGTH, temperature, seed), task2)
    queries = run["query_id"].unique().to_list()
    n_min = min(run.group_by("query_id").len()["len"].to_list(), default=0)
    for path, length in ((task1, TASK1_LENGTH), (task2, TASK2_LENGTH)):
        if n_min < length:
            log.warning(
                "%s: a query has only %d candidates, the track wants %d; written, not validated",
                path, n_min, length,
            )  # fmt: skip
    if n_min >= TASK1_LENGTH:
        validate_task1(task1, queries)
    if n_min >= TASK2_LENGTH:
        validate_task2(task2, queries)
    return task1, task2
