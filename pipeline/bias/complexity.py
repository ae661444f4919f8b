"""Query linguistic complexity and easy / medium / hard bins (SPEC §3).

EqualizeIR (Cheng & Amiri, "EqualizeIR: Mitigating Linguistic Biases in Retrieval Models")
groups queries by linguistic complexity and reports the per-query variation of
effectiveness per group. Per query we compute lexical indices over its lowercase ``\\w+``
tokens (N tokens, V distinct types):

- ``ttr`` = V/N, ``cttr`` (Carroll) = V/√(2N), ``rttr`` (Guiraud) = V/√N,
  ``log_ttr`` (Herdan) = log V / log N, ``uber`` (Dugast) = (log N)² / (log N − log V);
- ``lexical_density`` = share of tokens not in a small English function-word list;
- ``mean_word_length`` (characters) and ``syllables_per_word`` (vowel-group heuristic).

**Decisions.** A query without words scores 0 on every index. Herdan's ``log_ttr`` is 1 when
V = N (including one-word queries, where it is 0/0). Dugast's ``uber`` diverges when no word
repeats (V = N, most queries): the raw value is null and its normalised value is 1, the
maximum. Each index is min-max normalised over the query set (a constant index normalises
to 0), ``complexity`` is the mean of the normalised indices, and queries are binned by the
tertiles of complexity (linear-interpolated 1/3 and 2/3 quantiles): ``easy`` ≤ q⅓ <
``medium`` ≤ q⅔ < ``hard``, so equal complexities always share a bin. The syntactic proxies
(clauses, dependency depth, NP / VP counts) need a dependency parser, which cannot be
installed offline: they are not computed, and :func:`available_indices` / the log say so.
"""

from __future__ import annotations

import logging
import math
import re

import polars as pl

from pipeline.bias.tokenize import words_tokens

logger = logging.getLogger(__name__)

LEXICAL_INDICES: tuple[str, ...] = (
    "ttr",
    "cttr",
    "rttr",
    "log_ttr",
    "uber",
    "lexical_density",
    "mean_word_length",
    "syllables_per_word",
)
SYNTACTIC_INDICES: tuple[str, ...] = ("clauses", "dependency_depth", "noun_phrases", "verb_phrases")
BINS: tuple[str, ...] = ("easy", "medium", "hard")

# English function words (articles, pronouns, prepositions, conjunctions, auxiliaries,
# question words, frequent adverbs): tokens outside this list count as content words.
_STOP_WORDS_TEXT = """
a an the this that these those there here
i me my mine we us our ours you your yours he him his she her hers it its they them
their theirs who whom whose which what when where why how whether
and or but nor so yet if then than because as while although though unless until
of in on at by for with without from to into onto upon about above below over under
between among through during before after against along around across off out up down
is am are was were be been being do does did done doing have has had having
will would shall should can could may might must
not no yes all any some each every both either neither such only own same other
very too also just more most much many few less least s t
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())
_VOWEL_GROUPS = re.compile(r"[aeiouy]+")


def available_indices() -> tuple[str, ...]:
    """The indices :func:`query_complexity` computes (the lexical ones; no parser offline)."""
    return LEXICAL_INDICES


def syllables(word: str) -> int:
    """Syllable estimate: vowel groups (``y`` counts), minus a silent final ``e``; at least 1."""
    count = len(_VOWEL_GROUPS.findall(word))
    if count > 1 and word.endswith("e") and not word.endswith(("le", "ee")):
        count -= 1
    return max(count, 1)


def lexical_indices(text: str | None) -> dict[str, float | None]:
    """The raw lexical indices of one query (``uber`` is None when no word repeats)."""
    tokens = words_tokens(text)
    n, v = len(tokens), len(set(tokens))
    if n == 0:
        zeros: dict[str, float | None] = dict.fromkeys(LEXICAL_INDICES, 0.0)
        return zeros
    return {
        "ttr": v / n,
        "cttr": v / math.sqrt(2 * n),
        "rttr": v / math.sqrt(n),
        "log_ttr": 1.0 if v == n else math.log(v) / math.log(n),
        "uber": None if v == n else math.log(n) ** 2 / (math.log(n) - math.log(v)),
        "lexical_density": sum(t not in STOP_WORDS for t in tokens) / n,
        "mean_word_length": sum(len(t) for t in tokens) / n,
        "syllables_per_word": sum(syllables(t) for t in tokens) / n,
    }


def _normalised(name: str) -> pl.Expr:
    """Min-max normalisation over the query set; constant → 0; null (``uber`` = ∞) → 1."""
    col = pl.col(name)
    lo, hi = col.min(), col.max()
    scaled = pl.when(col.is_null()).then(1.0).when(hi > lo).then((col - lo) / (hi - lo))
    return scaled.otherwise(0.0).alias(f"{name}_norm")


def _bin(complexity: pl.Expr) -> pl.Expr:
    """``easy`` / ``medium`` / ``hard`` by the tertiles of ``complexity``."""
    q1 = complexity.quantile(1 / 3, interpolation="linear")
    q2 = complexity.quantile(2 / 3, interpolation="linear")
    label = pl.when(complexity <= q1).then(pl.lit(BINS[0]))
    return label.when(complexity <= q2).then(pl.lit(BINS[1])).otherwise(pl.lit(BINS[2]))


def query_complexity(queries: pl.DataFrame, text_column: str = "text") -> pl.DataFrame:
    """Per query: ``n_words``, raw and normalised lexical indices, ``complexity`` and ``bin``.

    ``queries`` has ``query_id`` and ``text_column``; the result keeps their order. Columns:
    ``query_id, n_words, <index>…, <index>_norm…, complexity, bin`` for the indices of
    :func:`available_indices`.
    """
    missing = [c for c in ("query_id", text_column) if c not in queries.columns]
    if missing:
        raise ValueError(f"queries lack column(s) {missing}; has {queries.columns}")
    texts = queries[text_column].cast(pl.String).to_list()
    raw = pl.DataFrame(
        [lexical_indices(t) for t in texts],
        schema=dict.fromkeys(LEXICAL_INDICES, pl.Float64),
        orient="row",
    )
    n_words = pl.Series("n_words", [len(words_tokens(t)) for t in texts], dtype=pl.Int64)
    ids = queries.select(pl.col("query_id").cast(pl.String))
    frame = pl.concat([ids, n_words.to_frame(), raw], how="horizontal")
    norms = [f"{name}_norm" for name in LEXICAL_INDICES]
    out = frame.with_columns(_normalised(name) for name in LEXICAL_INDICES)
    out = out.with_columns(pl.mean_horizontal(norms).alias("complexity"))
    out = out.with_columns(_bin(pl.col("complexity")).alias("bin"))
    logger.info(
        "query complexity of %d queries from indices %s; bins %s; syntactic indices %s "
        "unavailable (no dependency parser installable offline)",
        out.height,
        list(LEXICAL_INDICES),
        dict(out["bin"].value_counts().iter_rows()) if out.height else {},
        list(SYNTACTIC_INDICES),
    )
    return out
