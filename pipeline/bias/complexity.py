"""Query linguistic complexity and easy / medium / hard bins (SPEC §3).

EqualizeIR (Cheng & Amiri, seed 001, §2 and Appendix B Table 4) averages column-normalised
indices of Lu's lexical complexity analyser (Lu 2012: density, sophistication, variation) and
L2 syntactic complexity analyser (Lu 2010), as implemented by LFTK (Lee & Lee 2023). LFTK is
CC BY-NC 4.0 and, like Lu's syntactic indices, needs a spaCy parser model; no such model is on
PyPI from its publisher (Explosion), only third-party re-uploads (docs/dependencies.md). So
the pipeline computes the Lu (2012) lexical indices that need no parser, over the lowercase
``\\w+`` tokens of each query (N tokens, T types), with maintained libraries:

- **variation** (``lexicalrichness``): ``ndw`` = T, ``ttr`` = T/N, ``cttr`` = T/√(2N),
  ``rttr`` = T/√N, ``log_ttr`` (Herdan) = log T / log N, ``uber`` (Dugast) =
  (log N)² / (log N − log T);
- **sophistication** (``wordfreq``): a word is *sophisticated* when it is a lexical word
  outside the 2,000 most frequent English words (Lu's LS1/LS2 with wordfreq's list in place
  of the BNC's): ``ls1`` = sophisticated lexical tokens / lexical tokens, ``ls2`` =
  sophisticated types / types;
- **density**: ``lexical_density`` = lexical tokens / N, a lexical word being one outside a
  small English function-word list (Lu counts nouns, adjectives, verbs and adverbs by POS tag;
  without a tagger the function-word list stands in);
- **length** (Lu 2010, the one syntactic index that needs no parser): ``mls`` = N / number of
  sentences (split after ``.``, ``!`` or ``?``; a query is usually one sentence);
- **surface** (SPEC §3): ``mean_word_length`` (characters), ``syllables_per_word`` (``pyphen``
  hyphenation points + 1).

Lu's other syntactic indices need a dependency parser. They are an **optional extra**: with
``score.complexity_parser`` naming an installed spaCy pipeline (``pip install -e '.[syntax]'``
and a parser model from Explosion's release), :mod:`pipeline.bias.syntax` adds dependency-parse
proxies of MLC, C/S, DC/C, CP/C, CN/C, VP/S and the maximum dependency depth, which go through
the same dropping and normalisation. Without it (the default) they are not computed; Lu's
T-unit indices (MLT, C/T, CT/T, DC/T, T/S, CP/T, CN/T, VP/T) and the POS-based variation
indices (LV, VV1, SVV1, CVV1, VV2, NV, AdjV, AdvV, ModV) never are (see docs/decisions.md).

**Decisions.** An index undefined for a query is null there: ``log_ttr`` when N = 1 (0/0),
``uber`` when no word repeats (T = N, division by zero), every index of a query without
words. An index is **dropped** (logged, and named with its reason in ``dropped_indices``) when
it is constant over the queries where it is defined, *quasi-constant* (one value on more than
90% of them: on Grep-BiasIR ``ttr`` and ``log_ttr`` are 1 on 114 of 117 queries, since short
queries rarely repeat a word, so they would only mark the three that do), or undefined on
more than half of the queries (on short queries ``uber`` is: most have no repeated word).
An index whose Spearman correlation with the query's length in words is at least 0.9 in
magnitude is kept but **named** a length proxy (``length_proxies``, e.g. ``ndw`` and ``mls``
at ρ = +1.00 on Grep-BiasIR): the complexity bins then partly sort queries by length.
Each kept index is min-max normalised over the query set; ``complexity`` is the mean of a
query's defined normalised indices; the bins are the tertiles of ``complexity``
(linear-interpolated 1/3 and 2/3 quantiles): ``easy`` ≤ q⅓ < ``medium`` ≤ q⅔ < ``hard``, so
equal complexities share a bin.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.bias.tokenize import words_tokens
from pipeline.errors import InputError
from pipeline.schemas import COMPLEXITY_INDICES

if TYPE_CHECKING:
    import pyphen

logger = logging.getLogger(__name__)

BINS: tuple[str, ...] = ("easy", "medium", "hard")
FREQUENT_WORDS = 2000  # Lu (2012): words beyond the 2,000 most frequent are sophisticated

# English function words (articles, pronouns, prepositions, conjunctions, auxiliaries,
# question words, frequent adverbs): tokens outside this list count as lexical words.
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
_SENTENCE_END = re.compile(r"[.!?]+(?:\s+|$)")


@dataclass(frozen=True)
class Words:
    """The tokens of one query and what the indices read from them."""

    tokens: list[str]
    lexical: list[str]  # tokens outside STOP_WORDS
    sophisticated: list[str]  # lexical tokens outside the FREQUENT_WORDS most frequent
    sentences: int  # at least 1


@cache
def frequent_words() -> frozenset[str]:
    """The 2,000 most frequent English words (wordfreq's shipped frequency list)."""
    from wordfreq import top_n_list  # here: wordfreq loads its lists at import (~0.5 s)

    return frozenset(top_n_list("en", FREQUENT_WORDS))


@cache
def _hyphenator() -> pyphen.Pyphen:
    import pyphen

    return pyphen.Pyphen(lang="en_US")


def syllables(word: str) -> int:
    """Syllable estimate: pyphen's hyphenation points + 1 (textstat's fallback rule)."""
    return len(_hyphenator().positions(word)) + 1


def words(text: str | None) -> Words:
    """Tokenise one query and classify its tokens."""
    tokens = words_tokens(text)
    lexical = [t for t in tokens if t not in STOP_WORDS]
    frequent = frequent_words()
    sophisticated = [t for t in lexical if t not in frequent]
    pieces = _SENTENCE_END.split(text or "")
    return Words(tokens, lexical, sophisticated, max(sum(bool(words_tokens(p)) for p in pieces), 1))


def _richness(w: Words) -> Any:
    # lexicalrichness imports matplotlib.pyplot at import time: load it only when used.
    from lexicalrichness import LexicalRichness

    return LexicalRichness(w.tokens, preprocessor=None, tokenizer=None)


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def _log_ttr(w: Words) -> float | None:
    return None if len(w.tokens) == 1 else float(_richness(w).Herdan)


def _uber(w: Words) -> float | None:
    lr = _richness(w)
    return None if lr.terms == lr.words else float(lr.Dugast)


INDICES: dict[str, Callable[[Words], float | None]] = {
    "lexical_density": lambda w: _ratio(len(w.lexical), len(w.tokens)),
    "ls1": lambda w: _ratio(len(w.sophisticated), len(w.lexical)),
    "ls2": lambda w: _ratio(len(set(w.sophisticated)), len(set(w.tokens))),
    "ndw": lambda w: float(_richness(w).terms),
    "ttr": lambda w: float(_richness(w).ttr),
    "cttr": lambda w: float(_richness(w).cttr),
    "rttr": lambda w: float(_richness(w).rttr),
    "log_ttr": _log_ttr,
    "uber": _uber,
    "mean_word_length": lambda w: sum(map(len, w.tokens)) / len(w.tokens),
    "syllables_per_word": lambda w: sum(map(syllables, w.tokens)) / len(w.tokens),
    "mls": lambda w: len(w.tokens) / w.sentences,
}
"""Index name → its value on one query (None where undefined), in schema order."""
assert tuple(INDICES) == COMPLEXITY_INDICES, "keep INDICES and schemas.COMPLEXITY_INDICES equal"


def available_indices() -> tuple[str, ...]:
    """The indices :func:`query_complexity` can compute (the parser-free lexical ones)."""
    return tuple(INDICES)


def raw_indices(text: str | None) -> dict[str, float | None]:
    """Every index of one query; all None for a query without words."""
    w = words(text)
    if not w.tokens:
        return dict.fromkeys(INDICES)
    return {name: fn(w) for name, fn in INDICES.items()}


QUASI_CONSTANT = 0.9  # an index with one value on more than this share of queries is dropped
LENGTH_PROXY = 0.9  # |Spearman(index, n_words)| at or above: named a length proxy


def drop_reason(values: pl.Series) -> str | None:
    """Why an index column carries no information over the query set, or None if it does."""
    undefined = values.null_count()
    if undefined * 2 > values.len():
        return f"undefined on {undefined} of {values.len()} queries"
    defined = values.drop_nulls()
    if defined.n_unique() <= 1:
        return "constant over the queries"
    counts = defined.value_counts(sort=True)
    mode, count = counts.row(0)
    if count > QUASI_CONSTANT * defined.len():
        return f"quasi-constant: {mode:g} on {count} of {defined.len()} queries"
    return None


def length_proxies(raw: pl.DataFrame, n_words: pl.Series) -> str:
    """``name (ρ +x.xx)`` of the columns whose |Spearman ρ| with ``n_words`` is at least
    ``LENGTH_PROXY``, ``; ``-separated (empty if none)."""
    out = []
    for name in raw.columns:
        both = pl.DataFrame({"x": raw[name], "n": n_words.cast(pl.Float64)}).drop_nulls()
        if both.height < 3 or both["x"].n_unique() < 2 or both["n"].n_unique() < 2:
            continue
        rho = float(both.select(pl.corr("x", "n", method="spearman")).item())
        if abs(rho) >= LENGTH_PROXY:
            out.append(f"{name} (ρ {rho:+.2f})")
    return "; ".join(out)


def _normalised(name: str) -> pl.Expr:
    """Min-max normalisation over the query set (kept indices are never constant)."""
    col = pl.col(name)
    return ((col - col.min()) / (col.max() - col.min())).alias(f"{name}_norm")


def _bin(complexity: pl.Expr) -> pl.Expr:
    """``easy`` / ``medium`` / ``hard`` by the tertiles of ``complexity``."""
    q1 = complexity.quantile(1 / 3, interpolation="linear")
    q2 = complexity.quantile(2 / 3, interpolation="linear")
    label = pl.when(complexity <= q1).then(pl.lit(BINS[0]))
    return label.when(complexity <= q2).then(pl.lit(BINS[1])).otherwise(pl.lit(BINS[2]))


def query_complexity(
    queries: pl.DataFrame, text_column: str = "text", parse: Callable[[str], Any] | None = None
) -> pl.DataFrame:
    """Per query: ``n_words``, ``complexity``, ``bin``, the indices used, raw and normalised.

    ``queries`` has ``query_id`` and ``text_column``; the result keeps their order, with the
    columns of ``schemas.QUERY_COMPLEXITY``: ``query_id, n_words, complexity, bin, indices,
    dropped_indices`` then ``<index>`` and ``<index>_norm`` of each index kept. ``parse``
    (a loaded spaCy pipeline, :func:`pipeline.bias.syntax.load_parser`) adds the Lu (2010)
    syntactic indices ``syntax.SYNTACTIC_INDICES`` after the lexical ones; None: lexical only.
    """
    missing = [c for c in ("query_id", text_column) if c not in queries.columns]
    if missing:
        raise InputError(f"queries lack column(s) {missing}; has {queries.columns}")
    texts = queries[text_column].cast(pl.String).to_list()
    raw = pl.DataFrame(
        [raw_indices(t) for t in texts], schema=dict.fromkeys(INDICES, pl.Float64), orient="row"
    )
    if parse is not None:
        from pipeline.bias.syntax import syntactic_indices

        raw = pl.concat([raw, syntactic_indices(texts, parse)], how="horizontal")
    reasons = {name: drop_reason(raw[name]) for name in raw.columns}
    kept = [name for name, why in reasons.items() if why is None]
    dropped = "; ".join(f"{name} ({why})" for name, why in reasons.items() if why is not None)
    if dropped:
        logger.warning("query complexity: dropped indices %s", dropped)
    norms = [f"{name}_norm" for name in kept]
    values = raw.select(kept).with_columns(_normalised(name) for name in kept)
    complexity = values.select(
        pl.mean_horizontal(norms) if kept else pl.repeat(None, raw.height, dtype=pl.Float64)
    ).to_series()
    out = queries.select(pl.col("query_id").cast(pl.String)).with_columns(
        pl.Series("n_words", [len(words_tokens(t)) for t in texts], dtype=pl.Int64),
        complexity.alias("complexity").fill_null(0.0),
    )
    proxies = length_proxies(raw.select(kept), out["n_words"])
    if proxies:
        logger.warning("query complexity: length proxies among the kept indices: %s", proxies)
    out = out.with_columns(
        _bin(pl.col("complexity")).alias("bin"),
        pl.lit(",".join(kept)).alias("indices"),
        pl.lit(dropped).alias("dropped_indices"),
        pl.lit(proxies).alias("length_proxies"),
    )
    if kept:
        columns = [c for name in kept for c in (name, f"{name}_norm")]
        out = pl.concat([out, values.select(columns)], how="horizontal")
    logger.info(
        "query complexity of %d queries from %d indices %s; bins %s",
        out.height,
        len(kept),
        kept,
        dict(out["bin"].value_counts().iter_rows()) if out.height else {},
    )
    return out
