"""Per-document gender scores: Ψ, ζ and lexicon shares (SPEC §2, the ``score`` stage).

- Ψ and its ``tc`` / ``tf`` / ``bool`` variants: Rekabsaz & Schedl (2020), "Do Neural Ranking
  Models Intensify Gender Bias?" (SIGIR), counted over the gender-definitional word list.
- ζ, the document neutrality behind NFaiRR: Rekabsaz, Kopeinik & Schedl (2021), "Societal
  Biases in Retrieved Contents: Measurement Framework and Adversarial Mitigation for BERT
  Rankers" (SIGIR), counted over the gender-representative word list.
- ``lex_f`` / ``lex_m``: the LIWC gender shares reported by Bigdeli et al. (2022), "Bias-aware
  Fair Neural Ranking for Addressing Stereotypical Gender Biases" (EDBT), always over
  lowercase ``\\w+`` tokens.

:func:`score_documents` is vectorised (see :mod:`pipeline.bias.counting`); the plain
per-document loop that defines the same numbers, the reference of the tests and the
benchmark, is ``benchmarks.naive_scoring.score_documents_naive`` (not part of the library).
"""

from __future__ import annotations

import logging
import math
import time

import polars as pl

from pipeline.bias.counting import Group, count_batch
from pipeline.bias.lexicon import Lexicon, WordList
from pipeline.bias.tokenize import get_tokenizer
from pipeline.errors import InputError

logger = logging.getLogger(__name__)

SCORE_SCHEMA: dict[str, type[pl.DataType]] = {
    "doc_id": pl.String,
    "tc_f": pl.Int64,
    "tc_m": pl.Int64,
    "tf_f": pl.Float64,
    "tf_m": pl.Float64,
    "bool_f": pl.Int64,
    "bool_m": pl.Int64,
    "psi_tc": pl.Float64,
    "psi_tf": pl.Float64,
    "psi_bool": pl.Float64,
    "neutrality": pl.Float64,
    "lex_f": pl.Float64,
    "lex_m": pl.Float64,
    "n_words": pl.Int64,
    "tokenizer": pl.String,
    "lexicon": pl.String,
}
DEFAULT_TAU = 1.0
DEFAULT_TARGET: dict[str, float] = {"f": 0.5, "m": 0.5}
DEFAULT_BATCH_SIZE = 100_000


def check_zeta_params(tau: float, target: dict[str, float] | None) -> dict[str, float]:
    """Validate ζ's threshold ``tau`` and target ``J``; return ``J`` (default 0.5 / 0.5)."""
    if not math.isfinite(tau) or tau < 0:
        raise InputError(f"tau must be a finite number >= 0, got {tau!r}")
    j = dict(DEFAULT_TARGET if target is None else target)
    if set(j) != {"f", "m"}:
        raise InputError(f"target must have exactly the keys ['f', 'm'], got {sorted(j)}")
    if any(not math.isfinite(v) or v < 0 for v in j.values()) or abs(sum(j.values()) - 1) > 1e-9:
        raise InputError(f"target must be a distribution (values >= 0 summing to 1), got {j}")
    return j


def check_corpus(corpus: pl.DataFrame) -> pl.DataFrame:
    """The ``doc_id`` and ``text`` columns of ``corpus``, both String (all-null text allowed)."""
    missing = [c for c in ("doc_id", "text") if c not in corpus.columns]
    if missing:
        raise InputError(f"corpus lacks column(s) {missing}; has {corpus.columns}")
    docs = corpus.select("doc_id", "text")
    if docs.schema["text"] == pl.Null:
        docs = docs.with_columns(pl.col("text").cast(pl.String))
    wrong = {c: str(t) for c, t in docs.schema.items() if t != pl.String}
    if wrong:
        raise InputError(f"corpus columns must be String (Utf8); got {wrong}")
    return docs


def zeta(
    m_f: float, m_m: float, tau: float = DEFAULT_TAU, target: dict[str, float] | None = None
) -> float:
    """Document neutrality ζ (Rekabsaz et al. 2021) from representative-word counts.

    ``1`` if ``M_f + M_m <= tau``, else ``1 - Σ_g |M_g / S - J_g|``.
    """
    j = DEFAULT_TARGET if target is None else target
    total = m_f + m_m
    if total <= tau:
        return 1.0
    return 1.0 - (abs(m_f / total - j["f"]) + abs(m_m / total - j["m"]))


def _zeta_expr(tau: float, target: dict[str, float]) -> pl.Expr:
    """:func:`zeta` over the count columns ``rep_f`` / ``rep_m``."""
    m_f, m_m = pl.col("rep_f"), pl.col("rep_m")
    total = m_f + m_m
    gap = (m_f / total - target["f"]).abs() + (m_m / total - target["m"]).abs()
    return pl.when(total <= tau).then(1.0).otherwise(1.0 - gap)


def _score_columns(
    tau: float, target: dict[str, float], tokenizer: str, lexicon: str
) -> list[pl.Expr]:
    """The SCORE_SCHEMA columns from ``tc_*``, ``rep_*``, ``lex_count_*`` and ``n_words``."""
    c, n = pl.col, pl.col("n_words")
    tf = {g: (c(f"tc_{g}") + 1).cast(pl.Float64).log() for g in "fm"}
    present = {g: (c(f"tc_{g}") > 0).cast(pl.Int64) for g in "fm"}
    share = {g: pl.when(n > 0).then(c(f"lex_count_{g}") / n).otherwise(0.0) for g in "fm"}
    cols = {
        "doc_id": c("doc_id"),
        "tc_f": c("tc_f"),
        "tc_m": c("tc_m"),
        "tf_f": tf["f"],
        "tf_m": tf["m"],
        "bool_f": present["f"],
        "bool_m": present["m"],
        "psi_tc": c("tc_f") - c("tc_m"),
        "psi_tf": tf["f"] - tf["m"],
        "psi_bool": present["f"] - present["m"],
        "neutrality": _zeta_expr(tau, target),
        "lex_f": share["f"],
        "lex_m": share["m"],
        "n_words": n,
        "tokenizer": pl.lit(tokenizer),
        "lexicon": pl.lit(lexicon),
    }
    return [expr.cast(SCORE_SCHEMA[name]).alias(name) for name, expr in cols.items()]


def score_documents(
    corpus: pl.DataFrame,
    specific: WordList,
    representative: WordList,
    lexicon: Lexicon,
    tokenizer: str = "reference",
    tau: float = DEFAULT_TAU,
    target: dict[str, float] | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> pl.DataFrame:
    """Score every document of ``corpus`` (``doc_id``, ``text``) as in SPEC §2, vectorised.

    One row per document in corpus order with the columns of :data:`SCORE_SCHEMA`. Ψ counts
    ``specific`` words and ζ counts ``representative`` words, both among ``tokenizer`` tokens;
    ``lex_f`` / ``lex_m`` share the lowercase ``\\w+`` tokens matching ``lexicon``. Empty or
    null text scores zeros and ζ = 1. Slices of ``batch_size`` documents bound the memory.
    """
    tok = get_tokenizer(tokenizer)
    j = check_zeta_params(tau, target)
    docs = check_corpus(corpus)
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    start = time.perf_counter()
    lists = (
        Group("tc_f", specific.female),
        Group("tc_m", specific.male),
        Group("rep_f", representative.female),
        Group("rep_m", representative.male),
    )
    final = _score_columns(tau, j, tok.name, lexicon.name)
    parts = [
        count_batch(docs.slice(offset, batch_size), tok, lists, lexicon).select(final)
        for offset in range(0, max(docs.height, 1), batch_size)
    ]
    _log_summary(docs, tok.name, lexicon.name, time.perf_counter() - start)
    return pl.concat(parts)


def _log_summary(docs: pl.DataFrame, tokenizer: str, lexicon: str, seconds: float) -> None:
    """Log the document count, the empty / missing texts and the rate."""
    text = pl.col("text")
    empty = docs.select((text.is_null() | (text.str.strip_chars() == "")).sum()).item()
    rate = docs.height / seconds if seconds > 0 else float("inf")
    logger.info(
        "scored %d documents (tokenizer=%s, lexicon=%s) in %.2f s (%.0f docs/s); "
        "%d with empty or missing text",
        docs.height,
        tokenizer,
        lexicon,
        seconds,
        rate,
        empty,
    )
