"""Arrow schema of every artifact the pipeline writes, and validation against it.

Each artifact has required columns (name → Arrow type) and optional columns. A table that
lacks a required column, carries an unknown column, or has a column of the wrong type is
rejected with one error naming the file, the missing and extra columns and the wrong types.
Ids are strings everywhere; ranks start at 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.errors import InputError

STR = pa.string()
I64 = pa.int64()
F64 = pa.float64()


@dataclass(frozen=True)
class Schema:
    """Columns of one artifact: required ones in order, then optional ones."""

    name: str
    required: dict[str, pa.DataType]
    optional: dict[str, pa.DataType] = field(default_factory=dict)
    unique: tuple[str, ...] = ()
    non_empty: bool = False
    finite: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()  # string columns that must have no nulls, not all empty

    def columns(self) -> dict[str, pa.DataType]:
        return {**self.required, **self.optional}


CORPUS = Schema(
    "corpus",
    {"doc_id": STR, "text": STR},
    {"title": STR, "group": STR, "split": STR, "fold": I64},
    unique=("doc_id",),
    non_empty=True,
    texts=("text",),
)
QUERIES = Schema(
    "queries",
    {"query_id": STR, "text": STR, "split": STR},
    {"set": STR, "category": STR, "fold": I64},  # fold: where the query is tested (k-fold)
    unique=("query_id",),
    non_empty=True,
    texts=("text",),
)
QRELS = Schema(
    "qrels",
    {"query_id": STR, "doc_id": STR, "relevance": I64},
    unique=("query_id", "doc_id"),
    non_empty=True,
)
# `fold` (k-fold cross-validation, SPEC §7): the fold whose model trains on the triple (or
# reads the candidate); a triple may appear under several folds. Absent without folds.
# `draw` (sampled negatives): the triple is one option of a draw; training keeps `draw` of
# the options sharing (fold, query, positive, source), drawn with the run's seed by the order
# stage (pipeline.ordering.draw_negatives). Null (or absent) for a fixed triple.
TRIPLES = Schema(
    "triples",
    {"query_id": STR, "pos_doc_id": STR, "neg_doc_id": STR},
    {"source": STR, "fold": I64, "draw": I64, "assignment": I64},
)
ASSIGNMENT = "assignment"
"""Which k-fold assignment a row belongs to (``dataset.grep_biasir.splits`` > 1): the i-th
of ``train.seeds`` trains, reranks and is evaluated on assignment ``i mod splits``; fold ids
are unique across assignments (assignment a's folds are a·k … a·k + k − 1). The column is
absent from triples and candidates with one assignment (the tables as before)."""
# Every query's fold in every assignment (one assignment, 0, without several).
FOLDS = Schema(
    "folds",
    {"query_id": STR, "assignment": I64, "fold": I64},
    unique=("assignment", "query_id"),
)
TRIPLE_COLUMNS = tuple(TRIPLES.required)
"""``(query_id, pos_doc_id, neg_doc_id)``: the columns that identify a triple."""
ORDERED_TRIPLES = Schema(
    "ordered triples",
    {"query_id": STR, "pos_doc_id": STR, "neg_doc_id": STR, "position": I64, "psi": F64},
    {"source": STR, "bucket": I64, "fold": I64, "seed": I64},
    unique=("seed", "fold", "position"),  # positions restart at 0 in every (seed,) fold
)
DOC_SCORES = Schema(
    "doc_scores",
    {
        "doc_id": STR,
        "tc_f": I64,
        "tc_m": I64,
        "tf_f": F64,
        "tf_m": F64,
        "bool_f": I64,
        "bool_m": I64,
        "psi_tc": F64,
        "psi_tf": F64,
        "psi_bool": F64,
        "neutrality": F64,
        "lex_f": F64,
        "lex_m": F64,
        "n_words": I64,
        "tokenizer": STR,
        "lexicon": STR,
    },
    unique=("doc_id",),
)
PSI_SOURCE = {"bool_abs": "psi_bool", "tf_abs": "psi_tf", "tc_abs": "psi_tc"}
"""params ``psi`` value → the signed ``DOC_SCORES`` column whose absolute value is that Ψ."""
PsiColumn = Literal["bool_abs", "tf_abs", "tc_abs"]
"""A Ψ column of ``doc_scores`` by its params name (the keys of ``PSI_SOURCE``)."""
Direction = Literal["low_to_high", "high_to_low"]
"""The per-method ``direction`` of an ordering that takes one (its record's ``method_keys``)."""

CANDIDATES = Schema(
    "candidates",
    {"query_id": STR, "doc_id": STR, "rank": I64, "score": F64},
    {"fold": I64, "assignment": I64},  # assignment: with several fold assignments (FOLDS)
    unique=("fold", "query_id", "doc_id"),
    finite=("score",),  # may be empty: extract writes an empty first_stage without a run
)
# `fold` (transfer runs): which fold's model ranked the list; each fold model ranks every
# query of the held-out collection.
RUN = Schema(
    "run",
    {"query_id": STR, "doc_id": STR, "score": F64, "rank": I64},
    {"fold": I64},
    unique=("fold", "query_id", "doc_id"),
    non_empty=True,
    finite=("score",),
)
CURVE = Schema("training curve", {"step": I64, "loss": F64, "lr": F64})
UNKNOWN_GROUP = "Unknown"
"""The alignments' group of a document whose value in a dimension is missing (a real group)."""
ALIGNMENTS = Schema(
    "alignments",
    {"doc_id": STR, "dimension": STR, "group": STR, "weight": F64},
    unique=("doc_id", "dimension", "group"),
)
COMPLEXITY_INDICES: tuple[str, ...] = (
    "lexical_density",
    "ls1",
    "ls2",
    "ndw",
    "ttr",
    "cttr",
    "rttr",
    "log_ttr",
    "uber",
    "mean_word_length",
    "syllables_per_word",
    "mls",
)
"""Candidate query-complexity indices (SPEC §3, computed in ``pipeline.bias.complexity``)."""

SYNTACTIC_INDICES: tuple[str, ...] = (
    "mlc",
    "c_s",
    "dc_c",
    "cp_c",
    "cn_c",
    "vp_s",
    "max_dep_depth",
)
"""Lu (2010) syntactic proxies from a dependency parse (``score.complexity_parser``, optional)."""

QUERY_COMPLEXITY = Schema(
    "query complexity",
    {
        "query_id": STR,
        "n_words": I64,
        "complexity": F64,
        "bin": STR,
        "indices": STR,  # comma-separated indices averaged into `complexity`
        "dropped_indices": STR,  # `name (reason)`; `; `-separated, empty if none
        "length_proxies": STR,  # `name (ρ +x.xx)` of kept indices that track query length
    },
    # raw value and min-max normalised value of each index used (dropped ones are absent)
    {c: F64 for name in COMPLEXITY_INDICES + SYNTACTIC_INDICES for c in (name, f"{name}_norm")},
    unique=("query_id",),
)
# Per F/M/N group of a collection's judged documents (pipeline/bias/group_words.py): how many
# gender-definitional words its documents carry and how many are neutral (ζ = 1).
GROUP_WORDS = Schema(
    "group words",
    {
        "group": STR,
        "documents": I64,
        "queries": I64,
        "gender_words": F64,
        "female_words": F64,
        "male_words": F64,
        "neutral_share": F64,
        "queries_more": I64,
    },
    unique=("group",),
)

ALL = {
    s.name: s
    for s in (
        CORPUS,
        QUERIES,
        QRELS,
        TRIPLES,
        FOLDS,
        ORDERED_TRIPLES,
        DOC_SCORES,
        CANDIDATES,
        RUN,
        CURVE,
        ALIGNMENTS,
        QUERY_COMPLEXITY,
        GROUP_WORDS,
    )
}


class SchemaError(InputError):
    """A table does not match its artifact schema."""


def _type_ok(actual: pa.DataType, expected: pa.DataType) -> bool:
    if actual == expected:
        return True
    # large_string / string_view are the same logical type as string.
    strings = (pa.string(), pa.large_string(), pa.string_view())
    return expected == pa.string() and actual in strings


def _show(t: pa.DataType) -> str:
    return "string" if t in (pa.large_string(), pa.string_view()) else str(t)


def validate(table: pa.Table, schema: Schema, source: str) -> pa.Table:
    """Check `table` against `schema`; return it with columns cast and ordered canonically.

    `source` names the file (or stage) in the error message.
    """
    cols = schema.columns()
    names = table.column_names
    missing = [c for c in schema.required if c not in names]
    extra = [c for c in names if c not in cols]
    wrong = [
        f"{c}: expected {cols[c]}, got {_show(table.schema.field(c).type)}"
        for c in names
        if c in cols and not _type_ok(table.schema.field(c).type, cols[c])
    ]
    if missing or extra or wrong:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unexpected columns {extra}")
        if wrong:
            parts.append("wrong types [" + "; ".join(wrong) + "]")
        raise SchemaError(
            f"{source}: does not match the {schema.name!r} schema: {', '.join(parts)}. "
            f"Expected columns {list(schema.required)} (optional {list(schema.optional)}). "
            "Regenerate it with `dvc repro` or fix the file."
        )
    ordered = [c for c in cols if c in names]
    out = table.select(ordered)
    target = pa.schema([(c, cols[c]) for c in ordered])
    out = out.cast(target)
    _check_rows(out, schema, source)
    _check_ids(out, schema, source)
    _check_texts(out, schema, source)
    return out


def _check_rows(table: pa.Table, schema: Schema, source: str) -> None:
    if schema.non_empty and table.num_rows == 0:
        raise SchemaError(
            f"{source}: the {schema.name!r} table is empty; expected at least one row. "
            "Rerun the stage that writes it (`dvc repro`) and check its params."
        )
    for c in schema.finite:
        bad = pc.invert(pc.fill_null(pc.is_finite(table.column(c)), False))
        n_bad = pc.sum(bad).as_py() or 0
        if n_bad:
            first = pc.index(bad, True).as_py()
            keys = {k: table.column(k)[first].as_py() for k in _unique(table, schema)}
            raise SchemaError(
                f"{source}: {n_bad} rows with a non-finite (NaN/inf) or missing {c!r}, first "
                f"{keys}; drop or recompute them (rerun the stage that wrote the file)."
            )


def _unique(table: pa.Table, schema: Schema) -> list[str]:
    """The key columns of ``schema.unique`` the table has (optional ones, e.g. `fold`, may be
    absent)."""
    return [c for c in schema.unique if c in table.column_names]


def _check_texts(table: pa.Table, schema: Schema, source: str) -> None:
    """No null texts (a tokenizer cannot read them), and not every text empty (nothing to
    score or rank: every fairness metric would read it as neutral)."""
    for c in schema.texts:
        column = table.column(c)
        if column.null_count:
            first = pc.index(column.is_null(), True).as_py()
            keys = {k: table.column(k)[first].as_py() for k in _unique(table, schema)}
            raise SchemaError(
                f"{source}: {column.null_count} rows have a null {c!r}, first {keys} (row "
                f"{first}); fix the file (give every row a text, or drop those rows) or "
                "regenerate it with `dvc repro`."
            )
        if table.num_rows and (pc.max(pc.utf8_length(column)).as_py() or 0) == 0:
            raise SchemaError(
                f"{source}: every one of the {table.num_rows} {c!r} values is empty, so nothing "
                "can be scored or ranked; fix the file, or the source it was made from "
                "(`dataset` in params.yaml), and rerun `dvc repro`."
            )


def _check_ids(table: pa.Table, schema: Schema, source: str) -> None:
    for c in schema.required:
        if schema.required[c] == STR and c.endswith("_id") and table.column(c).null_count:
            raise SchemaError(f"{source}: column {c!r} has {table.column(c).null_count} null ids")
    unique = _unique(table, schema)
    if not unique or table.num_rows == 0:
        return
    keys = table.select(unique)
    grouped = keys.group_by(unique).aggregate([([], "count_all")])
    dup = grouped.filter(pc.greater(grouped.column("count_all"), 1))
    if dup.num_rows:
        first = {c: dup.column(c)[0].as_py() for c in unique}
        raise SchemaError(
            f"{source}: {dup.num_rows} duplicate {tuple(unique)} keys in the {schema.name!r} "
            f"table, first {first}; each must appear once. Deduplicate the input."
        )


def keyed_schema(name: str, table: pa.Table, key: str) -> Schema:
    """Schema of a wide per-key table (per-query metrics, query complexity): `key` is a
    required unique string column, every other column keeps its own type."""
    others = {f.name: f.type for f in table.schema if f.name != key}
    return Schema(name, {key: STR}, others, unique=(key,))


GROUPS = ("F", "M", "N")
"""The content-gender labels of a corpus's `group` column that AWRF and the gap compare."""
NO_SINGLE_GROUP = ("both",)
"""Labels of documents with no single F/M/N group (Grep-BiasIR's `both`): left out of AWRF."""


def labelled_groups(corpus: pl.DataFrame, source: str) -> pl.DataFrame | None:
    """`doc_id, group` of the documents of `corpus` labelled F, M or N.

    ``None`` when the corpus has no `group` column, or no row labelled at all (nulls, empty or
    `both`). A label that is none of these stops with the file (`source`), the first row, the
    count and the fix: an unknown label would otherwise drop out of AWRF silently, and a corpus
    of unknown labels only left AWRF nothing to compare."""
    if "group" not in corpus.columns:
        return None
    frame = corpus.select(pl.col("doc_id").cast(pl.Utf8), pl.col("group").cast(pl.Utf8))
    known = (*GROUPS, *NO_SINGLE_GROUP, "")
    unknown = frame.filter(pl.col("group").is_not_null() & ~pl.col("group").is_in(known))
    if unknown.height:
        doc_id, label = unknown.row(0)
        hint = next((g for g in known if g and g.lower() == label.strip().lower()), None)
        mean = f" (did you mean {hint!r}?)" if hint else ""
        seen = sorted(set(unknown["group"].head(1000).to_list()))[:5]
        raise InputError(
            f"{source}: {unknown.height} documents have an unknown `group` label, first doc_id "
            f"{doc_id!r} with {label!r}{mean}; labels seen: {seen}. Use F, M or N (`both` or "
            "empty for a document with no single group), or drop the `group` column to skip "
            "AWRF and the counterfactual gap."
        )
    labelled = frame.filter(pl.col("group").is_in(GROUPS))
    return labelled if labelled.height else None
