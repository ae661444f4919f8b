"""Per-document gender scores (SPEC §2) written as a plain loop per document and token: the
readable definition of ``pipeline.bias.scoring.score_documents``, the naive side of
``bench_scoring`` and the reference ``tests/unit/test_bias_scoring.py`` checks ours against.
"""

from __future__ import annotations

import math

import polars as pl

from pipeline.bias.lexicon import Lexicon, WordList
from pipeline.bias.scoring import (
    DEFAULT_TAU,
    SCORE_SCHEMA,
    check_corpus,
    check_zeta_params,
    zeta,
)
from pipeline.bias.tokenize import Tokenizer, get_tokenizer, words_tokens


def _score_one(
    text: str | None,
    tok: Tokenizer,
    lists: tuple[WordList, WordList],
    lexicon: Lexicon,
    zeta_args: tuple[float, dict[str, float]],
) -> tuple[int | float, ...]:
    """The numeric columns of one document, in SCORE_SCHEMA order."""
    specific, representative = lists
    tokens = tok.tokens(text)
    tc_f = sum(t in specific.female for t in tokens)
    tc_m = sum(t in specific.male for t in tokens)
    rep_f = sum(t in representative.female for t in tokens)
    rep_m = sum(t in representative.male for t in tokens)
    words = words_tokens(text)
    n = len(words)
    lex_f = sum(lexicon.matches(w, "f") for w in words) / n if n else 0.0
    lex_m = sum(lexicon.matches(w, "m") for w in words) / n if n else 0.0
    tf_f, tf_m = math.log(tc_f + 1), math.log(tc_m + 1)
    bool_f, bool_m = int(tc_f > 0), int(tc_m > 0)
    psi = (float(tc_f - tc_m), tf_f - tf_m, float(bool_f - bool_m))
    neutrality = zeta(rep_f, rep_m, *zeta_args)
    return (tc_f, tc_m, tf_f, tf_m, bool_f, bool_m, *psi, neutrality, lex_f, lex_m, n)


def score_documents_naive(
    corpus: pl.DataFrame,
    specific: WordList,
    representative: WordList,
    lexicon: Lexicon,
    tokenizer: str = "reference",
    tau: float = DEFAULT_TAU,
    target: dict[str, float] | None = None,
) -> pl.DataFrame:
    """The same table as ``score_documents``, computed by a plain loop per document.

    The readable definition of SPEC §2; the tests and the benchmark compare against it.
    """
    tok = get_tokenizer(tokenizer)
    zeta_args = (tau, check_zeta_params(tau, target))
    docs = check_corpus(corpus)
    lists = (specific, representative)
    rows = [
        (doc_id, *_score_one(text, tok, lists, lexicon, zeta_args), tok.name, lexicon.name)
        for doc_id, text in docs.iter_rows()
    ]
    return pl.DataFrame(rows, schema=SCORE_SCHEMA, orient="row")
