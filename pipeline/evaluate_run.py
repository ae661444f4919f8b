"""Every metric of the suite for a run produced anywhere (issue 15, "Evaluate any run").

```
python -m pipeline.evaluate_run RUN.trec --qrels QRELS --corpus CORPUS \\
    [--queries QUERIES] [--liwc-dic FILE.dic] [--tokenizer words|reference] \\
    [--cutoffs 10 20] [--background CANDIDATES] [--awrf-target uniform|relevant] \\
    [--out metrics.json]
```
(or the console script `fair-eval`). It prints a table (effectiveness under the ir_measures
names, `RR@10 (MRR@10)`) and, with `--out`, writes the aggregates as JSON atomically, with the
same keys as the pipeline's `metrics/<method>.json`.

Inputs (plain or gzipped):

- RUN: TREC run `qid Q0 docid rank score tag`, fields separated by any spaces or tabs (`#`
  comment lines, e.g. an in-file ir_metadata block, are skipped); the rank field is
  ignored, as by trec_eval: effectiveness ranks by score, ties by doc id descending.
- QRELS: TREC qrels `qid iteration docid relevance` (any whitespace), or Parquet
  `query_id, doc_id, relevance`.
- CORPUS: `doc_id, text[, group]` as TSV (a header line naming the columns, or none: doc id,
  text[, group]), JSONL (one object per line) or Parquet. `id`/`_id`/`docno`/`pid` are read as
  `doc_id` and `contents`/`body` as `text`. A `group` of F/M/N (e.g. Grep-BiasIR's
  content gender) enables AWRF, expected exposure's group terms and the counterfactual gap;
  without it those are skipped with a message; a label other than F/M/N/`both` stops with
  the row.
- QUERIES (optional): `query_id[, text]` as TSV/JSONL/Parquet: only these queries (of the
  run and of the qrels) are evaluated (a `split` column: its `test` rows); with texts, the
  query complexity (SPEC §3) is computed and the per-bin variation of nDCG@10 (SPEC §4.5)
  is reported too.
- BACKGROUND (optional): NFaiRR's background set per query (a TREC run or Parquet
  `query_id, doc_id`), e.g. the BM25 candidates the run reranks; default: the run itself.

Incomplete input is refused (exit 2, one line counting every gap and the fix): queries of
the qrels without a ranking, queries of the run without qrels, qrels that judge nothing
relevant, documents of the run's top max(cut-off) missing from the corpus or with an empty
text (`pipeline.coverage`: each would make a number that is not what it looks like). A rank
or score that is not a number is refused with its line (`io.read_trec_run`).
`--allow-partial` evaluates the covered part only (queries with a ranking and a relevant
judgment, documents of the corpus with a text) and prints the coverage first; the JSON
holds the covered shares (`judged_queries`, `judged_docs`). No metric is printed for an
empty covered part.

On the pipeline's own files (`--corpus data/corpus.parquet --qrels data/qrels.trec
--queries data/queries.parquet --background data/candidates.parquet`, the tokenizer of
`params.yaml`) it reproduces `metrics/<method>.json` from `runs/<method>/run.trec`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pipeline import io, schemas
from pipeline.bias import TOKENIZERS, query_complexity
from pipeline.coverage import coverage, covered
from pipeline.errors import Command, running
from pipeline.measures import (
    DEFAULT_TOKENIZER,
    Collection,
    compute,
    ir_measures_name,
)
from pipeline.metrics.suite import DEFAULT_CUTOFFS

log = logging.getLogger("pipeline.evaluate_run")

FAIR_EVAL = Command(
    rerun="rerun fair-eval",
    missing="Check the path given on the command line.",
    failed="fair-eval wrote nothing",
)
"""What fixes suggest to a `fair-eval` user (never params.yaml or `dvc repro`)."""

ALIASES = {
    "doc_id": ("doc_id", "docno", "docid", "id", "_id", "pid"),
    "query_id": ("query_id", "qid", "topic", "id", "_id"),
    "text": ("text", "contents", "body", "query"),
    "relevance": ("relevance", "rel", "label", "score"),
}


def _open_text(path: Path) -> list[str]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return list(f.read().splitlines())
    except (OSError, UnicodeDecodeError) as e:
        raise io.ArtifactError(f"{path}: unreadable text file ({e})") from e


def _kind(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    for kind, suffixes in (("parquet", (".parquet",)), ("jsonl", (".jsonl", ".json"))):
        if name.endswith(suffixes):
            return kind
    return "text"


def _canonical(frame: pl.DataFrame, wanted: Sequence[str], path: Path, what: str) -> pl.DataFrame:
    """Rename known aliases to `wanted` columns; an error lists what the file has."""
    renames: dict[str, str] = {}
    for col in wanted:
        found = next((a for a in ALIASES.get(col, (col,)) if a in frame.columns), None)
        if found is None:
            raise io.ArtifactError(
                f"{path}: {what} has no {col!r} column (or one of {list(ALIASES.get(col, ()))}); "
                f"its columns: {frame.columns}"
            )
        renames[found] = col
    extra = [c for c in ("group",) if c in frame.columns and c not in renames.values()]
    return frame.rename(renames).select(*wanted, *extra)


def _read_table_file(path: str | Path, what: str) -> pl.DataFrame:
    """A Parquet or JSONL file as a frame (no column checks)."""
    p = Path(path)
    if not p.exists():
        raise io.ArtifactError(f"{p}: {what} file not found; check the path")
    try:
        if _kind(p) == "parquet":
            return pl.read_parquet(p)
        lines = [json.loads(x) for x in _open_text(p) if x.strip()]
        return pl.DataFrame(lines, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError, json.JSONDecodeError) as e:
        raise io.ArtifactError(f"{p}: malformed {what} ({e}); expected {_FORMATS[what]}") from e


_FORMATS = {
    "corpus": "TSV `doc_id<TAB>text[<TAB>group]`, JSONL or Parquet with doc_id and text",
    "queries": "TSV `query_id[<TAB>text]`, JSONL or Parquet with query_id",
    "qrels": "TREC qrels `qid 0 docid relevance` or Parquet query_id, doc_id, relevance",
    "background": "a TREC run or Parquet with query_id, doc_id",
}


def _read_tsv(path: Path, columns: Sequence[str], what: str) -> pl.DataFrame:
    """Tab-separated rows; a first line naming a known column is a header."""
    lines = [x for x in _open_text(path) if x.strip()]
    if not lines:
        raise io.ArtifactError(f"{path}: empty {what} file; expected {_FORMATS[what]}")
    first = lines[0].split("\t")
    known = {a for c in columns for a in ALIASES.get(c, (c,))}
    header = first if known & set(first) else None
    body = lines[1:] if header else lines
    width = len(header) if header else len(first)
    rows = [x.split("\t") for x in body]
    bad = next((i for i, r in enumerate(rows) if len(r) != width), None)
    if bad is not None:
        lineno = bad + 1 + (header is not None)
        raise io.ArtifactError(
            f"{path}: line {lineno} has {len(rows[bad])} tab-separated fields, expected "
            f"{width}; expected {_FORMATS[what]}"
        )
    names = header or [*columns, "group"][:width]
    return pl.DataFrame(rows, schema=dict.fromkeys(names, pl.Utf8), orient="row")


def _read_any(p: Path, columns: tuple[str, str], what: str) -> pl.DataFrame:
    """A TSV (``columns``) or a JSONL/Parquet table; a missing TSV names the file."""
    if _kind(p) != "text":
        return _read_table_file(p, what)
    if not p.exists():
        raise io.ArtifactError(f"{p}: {what} file not found; check the path")
    return _read_tsv(p, columns, what)


def read_corpus(path: str | Path) -> pl.DataFrame:
    """`doc_id, text[, group]` from TSV, JSONL or Parquet (see the module docstring)."""
    p = Path(path)
    frame = _read_any(p, ("doc_id", "text"), "corpus")
    out = _canonical(frame, ("doc_id", "text"), p, "the corpus")
    out = out.with_columns(pl.col("doc_id").cast(pl.Utf8), pl.col("text").cast(pl.Utf8))
    dup = out.filter(pl.col("doc_id").is_duplicated())
    if dup.height:
        raise io.ArtifactError(
            f"{p}: {dup.height} rows share a doc_id (first {dup['doc_id'][0]!r}); "
            "keep one text per document"
        )
    try:  # null or all-empty texts, null ids: the checks of the pipeline's own corpus
        schemas.validate(out.select("doc_id", "text").to_arrow(), schemas.CORPUS, str(p))
    except schemas.SchemaError as e:
        raise io.ArtifactError(str(e)) from e
    return out


def read_queries(path: str | Path) -> pl.DataFrame:
    """`query_id[, text]` from TSV, JSONL or Parquet. A `split` column (the pipeline's
    data/queries.parquet) keeps its `test` queries: the others are training queries, which
    no run ranks."""
    p = Path(path)
    frame = _read_any(p, ("query_id", "text"), "queries")
    if "split" in frame.columns:
        frame = frame.filter(pl.col("split") == "test")
    wanted = ("query_id", "text") if any(a in frame.columns for a in ALIASES["text"]) else ()
    out = _canonical(frame, wanted or ("query_id",), p, "the queries")
    return out.select(pl.all().cast(pl.Utf8)).drop("group", strict=False)


def read_qrels(path: str | Path) -> pl.DataFrame:
    """`query_id, doc_id, relevance` from TREC qrels (4 fields per line) or Parquet."""
    p = Path(path)
    if _kind(p) == "parquet":
        frame = _canonical(
            _read_table_file(p, "qrels"), ("query_id", "doc_id", "relevance"), p, "the qrels"
        )
        return frame.select(
            pl.col("query_id", "doc_id").cast(pl.Utf8), pl.col("relevance").cast(pl.Int64)
        )
    if not p.exists():
        raise io.ArtifactError(f"{p}: qrels file not found; check the path")
    rows = []
    for lineno, line in enumerate(_open_text(p), start=1):
        fields = line.split()
        if not fields or line.startswith("#"):
            continue
        if len(fields) != 4 or not fields[3].lstrip("-").isdigit():
            raise io.ArtifactError(
                f"{p}: line {lineno} is not a TREC qrels line: {line!r}; "
                f"expected {_FORMATS['qrels']}"
            )
        rows.append((fields[0], fields[2], int(fields[3])))
    if not rows:
        raise io.ArtifactError(f"{p}: no qrels; expected {_FORMATS['qrels']}")
    schema = {"query_id": pl.Utf8, "doc_id": pl.Utf8, "relevance": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row").unique(
        ["query_id", "doc_id"], keep="last", maintain_order=True
    )


def read_background(path: str | Path) -> pl.DataFrame:
    """`query_id, doc_id`: NFaiRR's background set, from a TREC run or Parquet."""
    p = Path(path)
    if _kind(p) == "parquet":
        frame = _read_table_file(p, "background")
        return _canonical(frame, ("query_id", "doc_id"), p, "the background").select(
            pl.col("query_id", "doc_id").cast(pl.Utf8)
        )
    return io.read_trec_run(p).select("query_id", "doc_id")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="fair-eval",
        description="Effectiveness and gender-fairness metrics (ARaB, NFaiRR, LIWC, AWRF, "
        "counterfactual gap, expected exposure) of a TREC run.",
    )
    ap.add_argument("run", help="TREC run file (plain or .gz)")
    ap.add_argument("--qrels", required=True, help=_FORMATS["qrels"])
    ap.add_argument("--corpus", required=True, help=_FORMATS["corpus"])
    ap.add_argument("--queries", help=_FORMATS["queries"] + ": evaluate only these")
    ap.add_argument("--liwc-dic", help="your LIWC .dic (categories female/male); default: open")
    ap.add_argument("--tokenizer", default=DEFAULT_TOKENIZER, choices=sorted(TOKENIZERS))
    ap.add_argument("--cutoffs", type=int, nargs="+", default=list(DEFAULT_CUTOFFS))
    ap.add_argument("--background", help=_FORMATS["background"] + " (NFaiRR; default: the run)")
    ap.add_argument("--awrf-target", default="uniform", choices=["uniform", "relevant"])
    ap.add_argument("--exposure-temperature", type=float, default=1.0)
    ap.add_argument("--out", help="write the aggregates as JSON here (atomically)")
    ap.add_argument(
        "--allow-partial",
        action="store_true",
        help="evaluate only the covered part of an incomplete input (queries with a ranking and "
        "a relevant judgment, documents of the corpus with a text); the coverage is printed "
        "first and written as judged_queries / judged_docs",
    )
    return ap


FIXES = {
    "unranked": "rank every query of the qrels, or pass --queries with the ones the run ranks",
    "unjudged": "use the qrels of the run's topics (the same query ids)",
    "no_relevant": "check the qrels' relevance column (relevant = above 0)",
    "unknown_docs": "use the corpus of the run's collection (the same doc ids, with texts)",
    "empty_texts": "use the corpus of the run's collection (the same doc ids, with texts)",
}


def checked(
    run: pl.DataFrame, qrels: pl.DataFrame, corpus: pl.DataFrame, ns: argparse.Namespace
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, float]]:
    """``(run, qrels, shares)`` to evaluate: the inputs as they are when they cover each
    other (`pipeline.coverage`); else, with `--allow-partial`, their covered part, with
    the coverage printed first and its shares (``judged_queries``, ``judged_docs``) for the
    JSON. Without `--allow-partial` an incomplete input raises `ArtifactError`: one line with
    every gap counted and the fix; so does a covered part with no query or document."""
    cov = coverage(run, qrels, corpus, max(ns.cutoffs))
    if cov.gaps and not ns.allow_partial:
        fixes = "; ".join(dict.fromkeys(FIXES[g.key] for g in cov.gaps))
        raise io.ArtifactError(
            f"{ns.run}: incomplete input (qrels {ns.qrels}, corpus {ns.corpus}): "
            + "; ".join(str(g) for g in cov.gaps)
            + f"; no metric computed. Fix: {fixes}; or pass --allow-partial to evaluate "
            "only the covered part (the output then starts with the coverage)."
        )
    if not cov.queries or not cov.docs:
        raise io.ArtifactError(
            f"{ns.run}: nothing to evaluate ({cov.line().removesuffix(_OVER)}): "
            + "; ".join(str(g) for g in cov.gaps)
            + "; no metric is computed over no data."
        )
    if not cov.gaps:
        return run, qrels, {}
    sys.stdout.write(cov.line() + "\n")
    run, qrels = covered(run, qrels, corpus)
    return run, qrels, cov.shares()


_OVER = "; every metric below is over these only"


def table(aggregates: Mapping[str, Any], cutoffs: Sequence[int]) -> str:
    """Metrics at each cut-off as a grid (ir_measures names), then every other key."""
    bases = list(dict.fromkeys(key.split("@")[0] for key in aggregates if "@" in key))
    grid = [b for b in bases if any(f"{b}@{k}" in aggregates for k in cutoffs)]
    width = max([len(_label(b)) for b in grid] + [len(k) for k in aggregates] + [6])
    lines = [f"{'metric':<{width}}" + "".join(f"{'@' + str(k):>10}" for k in cutoffs)]
    for b in grid:
        cells = [aggregates.get(f"{b}@{k}") for k in cutoffs]
        lines.append(f"{_label(b):<{width}}" + "".join(_fmt(c) for c in cells))
    shown = {f"{b}@{k}" for b in grid for k in cutoffs}
    rest = [k for k in aggregates if k not in shown]
    if rest:
        lines.append("")
        lines += [f"{k:<{width}}{_fmt(aggregates[k])}" for k in rest]
    return "\n".join(lines)


def _label(base: str) -> str:
    name = ir_measures_name(base)
    return base if name == base else f"{name} ({base})"


def _fmt(v: Any) -> str:
    if v is None:
        return f"{'':>10}"
    if isinstance(v, bool) or not isinstance(v, int | float):
        return f"{v!s:>10}"
    return f"{v:>10d}" if isinstance(v, int) else f"{v:>10.4f}"


def settings(ns: argparse.Namespace) -> dict[str, Any]:
    """The metric families' own settings from the options (``--awrf-target``: the ``awrf``
    record's ``target``, ``--exposure-temperature``: the ``exposure`` record's
    ``temperature``), each checked by its record's config."""
    from pipeline.config import build
    from pipeline.metrics import get_record

    given = {
        "awrf": {"target": ns.awrf_target},
        "exposure": {"temperature": ns.exposure_temperature},
    }
    return {
        name: build(get_record(name).config, values, f"--{name} settings")
        for name, values in given.items()
    }


def run_cli(ns: argparse.Namespace) -> dict[str, Any]:
    """Read the inputs, compute the suite, print the table, write `--out`; return the JSON."""
    run = io.read_trec_run(ns.run)
    qrels = read_qrels(ns.qrels)
    corpus = read_corpus(ns.corpus)
    complexity = None
    if ns.queries:
        queries = read_queries(ns.queries)
        run = run.join(queries.select("query_id"), on="query_id", how="semi")
        if run.height == 0:
            raise io.ArtifactError(
                f"{ns.queries}: none of its {queries.height} query ids is in the run {ns.run}"
            )
        qrels = qrels.join(queries.select("query_id"), on="query_id", how="semi")
        if "text" in queries.columns:
            complexity = query_complexity(queries)
    run, qrels, shares = checked(run, qrels, corpus, ns)
    background = read_background(ns.background) if ns.background else None
    coll = Collection.from_corpus(
        corpus,
        tokenizer=ns.tokenizer,
        liwc_dic=ns.liwc_dic,
        background=background,
        settings=settings(ns),
        source=str(ns.corpus),
    )
    aggregates, _ = compute(run, qrels, coll, cutoffs=ns.cutoffs, query_complexity=complexity)
    aggregates = {**aggregates, **shares}
    scores = coll.doc_scores
    result = {
        **aggregates,
        "run": str(ns.run),
        "tokenizer": scores["tokenizer"][0] if scores.height else ns.tokenizer,
        "lexicon": scores["lexicon"][0] if scores.height else "",
    }
    sys.stdout.write(table(aggregates, ns.cutoffs) + "\n")
    if ns.out:
        io.write_json(result, ns.out)
        log.info("wrote %s", ns.out)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (`fair-eval`): exit status 2 with one line for a bad input file."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    ns = parser().parse_args(argv)
    try:
        with running(FAIR_EVAL):
            run_cli(ns)
    except (io.ArtifactError, ValueError, io.DiskFullError) as e:
        log.error("%s", e)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
