"""The ``reference`` and ``words`` tokenisers (SPEC §2): polars expressions vs plain Python."""

from __future__ import annotations

import re

import polars as pl
import pytest

from pipeline.bias.tokenize import (
    TOKENIZERS,
    get_tokenizer,
    reference_tokens,
    words_tokens,
)

TEXTS = [
    "She said: women, her  HER",
    " leading and trailing ",
    "tab\tand\nnewline",
    "Don't stop-gap e-mail 2020_report",
    "Café über NAÏVE",
    "re\u0301sume\u0301 a\u200db ½ x² İstanbul ΟΔΟΣ 中文 😀 no\u00a0break",
    "",
    None,
]


def test_reference_keeps_punctuation_attached() -> None:
    assert reference_tokens("She said: women, her  HER") == [
        "she",
        "said:",
        "women,",
        "her",
        "her",
    ]
    assert reference_tokens("tab\tand\nnewline") == ["tab\tand\nnewline"]
    assert reference_tokens(" a  b ") == ["a", "b"]  # no empty tokens
    assert reference_tokens(None) == reference_tokens("") == []


def test_words_takes_runs_of_word_characters() -> None:
    assert words_tokens("She said: women, her  HER") == ["she", "said", "women", "her", "her"]
    assert words_tokens("Don't stop-gap 2020_report") == ["don", "t", "stop", "gap", "2020_report"]
    assert words_tokens("Café über") == ["café", "über"]
    assert words_tokens(None) == []
    # Python's \w: combining marks and joiners split words, numbers such as ½ are words
    assert words_tokens("re\u0301sume\u0301 a\u200db ½") == ["re", "sume", "a", "b", "½"]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_polars_expression_equals_python_reference(name: str) -> None:
    tokenizer = get_tokenizer(name)
    frame = pl.DataFrame({"text": TEXTS}, schema={"text": pl.String})
    got = frame.select(tokenizer.expr(pl.col("text")))["text"].to_list()
    assert got == [tokenizer.tokens(text) for text in TEXTS]


def test_unknown_tokenizer() -> None:
    expected = "unknown tokenizer 'x'; known: ['reference', 'words']"
    with pytest.raises(ValueError, match=re.escape(expected)):
        get_tokenizer("x")
