"""Tokenisers for the per-document gender scores (SPEC §2).

``reference`` reproduces the whitespace tokenisation of the published ARaB / NFaiRR code of
Rekabsaz & Schedl (2020), "Do Neural Ranking Models Intensify Gender Bias?" (SIGIR), and
Rekabsaz, Kopeinik & Schedl (2021), "Societal Biases in Retrieved Contents" (SIGIR): the text
is lowercased and split on the single space character ``" "``, so punctuation stays attached
(``women,`` is not ``women``) and tabs / newlines do not separate tokens. **Decision:** the
empty strings that two adjacent spaces (or a leading / trailing space) produce are not
tokens. They can never equal a list word, so only code that counts tokens sees the difference.

``words`` lowercases and takes the maximal runs of ``\\w`` (Unicode word characters) as tokens;
the LIWC shares (SPEC §4.4) always use it.

Each tokeniser has a polars expression (:meth:`Tokenizer.expr`: text → ``list[str]``, a null
text gives ``[]``) and a plain-Python reference function with the same meaning, used by the
tests and the naive scorer. **Decision:** ``\\w`` means Python's ``\\w`` for ``str`` (letters,
numbers and ``_``, i.e. ``[\\p{L}\\p{N}_]``), not Rust's (which adds combining marks and
joiners). The polars ``words`` tokens are computed as "replace every character that is
neither ``[\\p{L}\\p{N}_]`` nor a space by a space, split on spaces, drop empties", which yields
exactly the runs and costs half of ``str.extract_all``. Checked over every code point: the
two engines (tokens and lowercasing) differ only on characters that are unassigned in
Python's Unicode database.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from pipeline.errors import InputError

WORD_PATTERN = r"\w+"
_WORD_RE = re.compile(WORD_PATTERN)


def reference_tokens(text: str | None) -> list[str]:
    """``reference`` tokens of one text: lowercase, split on ``" "``, empty strings dropped."""
    if not text:
        return []
    return [token for token in text.lower().split(" ") if token]


def words_tokens(text: str | None) -> list[str]:
    """``words`` tokens of one text: the lowercase runs of ``\\w``."""
    if not text:
        return []
    return _WORD_RE.findall(text.lower())


def lowercase(text: pl.Expr) -> pl.Expr:
    """Lowercase text with null read as the empty string."""
    return text.fill_null("").str.to_lowercase()


def reference_split(lower: pl.Expr) -> pl.Expr:
    """``reference`` tokens of lowercase text, possibly with empty strings."""
    return lower.str.split(" ")


def words_split(lower: pl.Expr) -> pl.Expr:
    """``words`` (Python ``\\w+``) tokens of lowercase text, possibly with empty strings."""
    return lower.str.replace_all(r"[^\p{L}\p{N}_ ]", " ").str.split(" ")


def drop_empty(tokens: pl.Expr) -> pl.Expr:
    """Remove the empty strings from a ``list[str]`` expression."""
    return tokens.list.eval(pl.element().filter(pl.element() != ""))


def count_nonempty(tokens: pl.Expr) -> pl.Expr:
    """Number of non-empty strings in a ``list[str]`` expression (Int64)."""
    return (tokens.list.len() - tokens.list.count_matches("")).cast(pl.Int64)


@dataclass(frozen=True)
class Tokenizer:
    """A named tokeniser: a polars ``split`` and its plain-Python reference ``tokens``.

    ``split`` maps lowercase non-null text to tokens that may include empty strings (they
    match no list word, so scoring counts with it directly and skips the costly filter).
    """

    name: str
    split: Callable[[pl.Expr], pl.Expr]
    tokens: Callable[[str | None], list[str]]
    description: str

    def expr(self, text: pl.Expr) -> pl.Expr:
        """Tokens of ``text`` (any case, nulls allowed) as ``list[str]`` without empties."""
        return drop_empty(self.split(lowercase(text)))


TOKENIZERS: dict[str, Tokenizer] = {
    "reference": Tokenizer(
        "reference",
        reference_split,
        reference_tokens,
        "lowercase, split on a single space; punctuation stays attached",
    ),
    "words": Tokenizer("words", words_split, words_tokens, "lowercase, maximal runs of \\w"),
}


def get_tokenizer(name: str) -> Tokenizer:
    """The tokeniser registered as ``name``; an unknown name raises ``ValueError``."""
    try:
        return TOKENIZERS[name]
    except KeyError:
        raise InputError(f"unknown tokenizer {name!r}; known: {sorted(TOKENIZERS)}") from None
