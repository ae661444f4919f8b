"""Per-document scores Ψ / ζ / lexicon shares (SPEC §2) against hand-computed values."""

from __future__ import annotations

import logging
import math
import random
import re

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from benchmarks.naive_scoring import score_documents_naive
from pipeline.bias.lexicon import (
    REPRESENTATIVE_PATH,
    SPECIFIC_PATH,
    Lexicon,
    WordList,
    default_lexicon,
    load_wordlist,
)
from pipeline.bias.scoring import SCORE_SCHEMA, score_documents, zeta

SPECIFIC = load_wordlist(SPECIFIC_PATH)
REPRESENTATIVE = load_wordlist(REPRESENTATIVE_PATH)
LEXICON = default_lexicon()
WILDCARDS = Lexicon(
    "liwc:test", frozenset({"wom*", "she", "girl*"}), frozenset({"he", "man*", "boy*"})
)

CORPUS = pl.DataFrame(
    {
        "doc_id": ["d1", "d2", "d3", "d4", "d5", "d6"],
        "text": [
            "She told her mother about women, men and John",
            "",
            None,
            "HIS  father, his son.",
            "Mary met a friend",
            "the weather is nice",
        ],
    }
)


def _zeta(m_f: int, m_m: int) -> float:
    """ζ with tau = 1 and J = (0.5, 0.5), written out."""
    s = m_f + m_m
    return 1.0 if s <= 1 else 1 - (abs(m_f / s - 0.5) + abs(m_m / s - 0.5))


def _expected(
    tc_f: int, tc_m: int, rep: tuple[int, int], lex: tuple[int, int], n: int
) -> dict[str, float]:
    """A score row from hand counts: tf = ln(c + 1), Ψ = female − male."""
    tf_f, tf_m = math.log(tc_f + 1), math.log(tc_m + 1)
    bool_f, bool_m = int(tc_f > 0), int(tc_m > 0)
    return {
        "tc_f": tc_f,
        "tc_m": tc_m,
        "tf_f": tf_f,
        "tf_m": tf_m,
        "bool_f": bool_f,
        "bool_m": bool_m,
        "psi_tc": tc_f - tc_m,
        "psi_tf": tf_f - tf_m,
        "psi_bool": bool_f - bool_m,
        "neutrality": _zeta(*rep),
        "lex_f": lex[0] / n if n else 0.0,
        "lex_m": lex[1] / n if n else 0.0,
        "n_words": n,
    }


def _check(scores: pl.DataFrame, expected: dict[str, dict[str, float]]) -> None:
    rows = {row["doc_id"]: row for row in scores.iter_rows(named=True)}
    for doc_id, values in expected.items():
        for column, value in values.items():
            assert rows[doc_id][column] == pytest.approx(value), (doc_id, column)


ZERO = _expected(0, 0, (0, 0), (0, 0), 0)


def test_reference_tokenizer_hand_computed() -> None:
    scores = score_documents(CORPUS, SPECIFIC, REPRESENTATIVE, LEXICON)
    _check(
        scores,
        {
            # she her mother | men; "women," is not "women"; john is a male name; 9 \w+ words,
            # of which she her mother women are female and men is male in the lexicon
            "d1": _expected(3, 1, (3, 2), (4, 1), 9),
            "d2": ZERO,
            "d3": ZERO,
            # his his ("father," and "son." keep their punctuation); 4 words, all male
            "d4": _expected(0, 2, (0, 2), (0, 4), 4),
            "d5": _expected(0, 0, (1, 0), (0, 0), 4),  # one name: S = 1 <= tau -> ζ = 1
            "d6": _expected(0, 0, (0, 0), (0, 0), 4),
        },
    )
    assert scores["neutrality"].to_list()[:2] == pytest.approx([0.8, 1.0])
    assert scores["tokenizer"].unique().to_list() == ["reference"]
    assert scores["lexicon"].unique().to_list() == ["open:wordlist_genderspecific"]


def test_words_tokenizer_counts_punctuation_attached_words() -> None:
    scores = score_documents(CORPUS, SPECIFIC, REPRESENTATIVE, LEXICON, tokenizer="words")
    _check(
        scores,
        {
            "d1": _expected(4, 1, (4, 2), (4, 1), 9),  # "women," counts as women
            "d4": _expected(0, 4, (0, 4), (0, 4), 4),
        },
    )
    assert scores.row(0, named=True)["neutrality"] == pytest.approx(2 / 3)


def test_schema_and_order() -> None:
    scores = score_documents(CORPUS, SPECIFIC, REPRESENTATIVE, LEXICON, batch_size=4)
    assert scores.schema == pl.Schema(SCORE_SCHEMA)
    assert scores["doc_id"].to_list() == CORPUS["doc_id"].to_list()


@pytest.mark.parametrize(
    ("text", "counts", "expected"),
    [
        ("a woman walked", (1, 0), 1.0),
        ("she and her", (2, 0), 0.0),
        ("she told him about her", (2, 1), 1 - (abs(2 / 3 - 0.5) + abs(1 / 3 - 0.5))),
        ("he and she", (1, 1), 1.0),
    ],
)
def test_spec_zeta_examples(text: str, counts: tuple[int, int], expected: float) -> None:
    corpus = pl.DataFrame({"doc_id": ["q"], "text": [text]})
    scores = score_documents(corpus, SPECIFIC, REPRESENTATIVE, LEXICON)
    assert scores["neutrality"].item() == pytest.approx(expected)
    assert zeta(*counts) == pytest.approx(expected)
    assert round(expected, 3) in {1.0, 0.0, 0.667}


def test_tau_and_target() -> None:
    corpus = pl.DataFrame({"doc_id": ["a", "b"], "text": ["a woman walked", "she and he"]})
    scores = score_documents(corpus, SPECIFIC, REPRESENTATIVE, LEXICON, tau=0.0)
    # S = 1 > tau = 0: 1 - (|1 - 0.5| + |0 - 0.5|) = 0
    assert scores["neutrality"].to_list() == pytest.approx([0.0, 1.0])
    skewed = score_documents(
        corpus, SPECIFIC, REPRESENTATIVE, LEXICON, tau=0.0, target={"f": 1.0, "m": 0.0}
    )
    # a: 1 - (|1 - 1| + |0 - 0|) = 1; b: 1 - (|0.5 - 1| + |0.5 - 0|) = 0
    assert skewed["neutrality"].to_list() == pytest.approx([1.0, 0.0])


def test_psi_signs() -> None:
    corpus = pl.DataFrame({"doc_id": ["f", "m", "n"], "text": ["she she he", "he him", "he she"]})
    scores = score_documents(corpus, SPECIFIC, REPRESENTATIVE, LEXICON)
    for column in ("psi_tc", "psi_tf", "psi_bool"):
        signs = [math.copysign(1, v) if v else 0 for v in scores[column]]
        expected = [1, -1, 0] if column != "psi_bool" else [0, -1, 0]
        assert signs == expected, column
    assert scores["psi_tf"].to_list() == pytest.approx(
        [math.log(3) - math.log(2), -math.log(3), 0.0]
    )


def test_empty_documents_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="pipeline.bias.scoring"):
        score_documents(CORPUS, SPECIFIC, REPRESENTATIVE, LEXICON)
    assert "scored 6 documents" in caplog.text
    assert "2 with empty or missing text" in caplog.text


def test_wildcard_lexicon() -> None:
    corpus = pl.DataFrame({"doc_id": ["x"], "text": ["Women, womb and wombat; manly BOYS he's"]})
    scores = score_documents(corpus, SPECIFIC, REPRESENTATIVE, WILDCARDS)
    # \w+ tokens: women womb and wombat manly boys he s -> 3 female, 3 male of 8
    assert scores["lex_f"].item() == pytest.approx(3 / 8)
    assert scores["lex_m"].item() == pytest.approx(3 / 8)
    assert scores["lexicon"].item() == "liwc:test"


def _random_corpus(n: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    gendered = [*sorted(SPECIFIC.female | SPECIFIC.male), "John", "Mary", "LEE", "james"]
    plain = ["the", "of", "a", "wombat", "manly", "boyish", "café", "Über", "naïve", "2020", "x_y"]
    plain += ["he\u0301r", "½", "İ", "wo\u200dmen", "中文"]
    punct = ["", "", "", ",", ".", "'s", ")", "-"]
    seps = [" ", " ", " ", " ", "  ", "\t", "\n", " - ", "\u00a0"]
    texts: list[str | None] = []
    for _ in range(n):
        k = rng.choice([0, 1, 2, 5, 12, 30])
        words = [rng.choice(rng.choice([gendered, plain])) + rng.choice(punct) for _ in range(k)]
        words = [w.upper() if rng.random() < 0.1 else w for w in words]
        texts.append(None if rng.random() < 0.03 else "".join(w + rng.choice(seps) for w in words))
    return pl.DataFrame({"doc_id": [f"doc{i}" for i in range(n)], "text": texts})


@pytest.mark.parametrize("tokenizer", ["reference", "words"])
@pytest.mark.parametrize("lexicon", [LEXICON, WILDCARDS], ids=["open", "wildcards"])
def test_vectorised_equals_naive(tokenizer: str, lexicon: Lexicon) -> None:
    corpus = _random_corpus(400, seed=7)
    args = (corpus, SPECIFIC, REPRESENTATIVE, lexicon, tokenizer)
    fast = score_documents(*args, batch_size=37)
    assert fast["tc_f"].sum() > 50 and fast["lex_m"].sum() > 0  # the corpus exercises the lists
    assert_frame_equal(fast, score_documents_naive(*args))


def test_invalid_arguments() -> None:
    with pytest.raises(
        ValueError, match=re.escape("unknown tokenizer 'x'; known: ['reference', 'words']")
    ):
        score_documents(CORPUS, SPECIFIC, REPRESENTATIVE, LEXICON, tokenizer="x")
    with pytest.raises(ValueError, match="target must be a distribution"):
        score_documents(CORPUS, SPECIFIC, REPRESENTATIVE, LEXICON, target={"f": 0.7, "m": 0.7})
    with pytest.raises(ValueError, match=re.escape("target must have exactly the keys ['f', 'm']")):
        score_documents(CORPUS, SPECIFIC, REPRESENTATIVE, LEXICON, target={"f": 1.0})
    with pytest.raises(ValueError, match="tau must be a finite number >= 0"):
        score_documents(CORPUS, SPECIFIC, REPRESENTATIVE, LEXICON, tau=-1.0)
    with pytest.raises(ValueError, match=re.escape("corpus lacks column(s) ['text']")):
        score_documents(CORPUS.drop("text"), SPECIFIC, REPRESENTATIVE, LEXICON)


def test_all_null_text_and_empty_corpus() -> None:
    nulls = pl.DataFrame({"doc_id": ["a", "b"], "text": [None, None]})
    scores = score_documents(nulls, SPECIFIC, REPRESENTATIVE, LEXICON)
    assert scores["neutrality"].to_list() == [1.0, 1.0] and scores["n_words"].to_list() == [0, 0]
    empty = score_documents(CORPUS.head(0), SPECIFIC, REPRESENTATIVE, LEXICON)
    assert empty.height == 0 and empty.schema == pl.Schema(SCORE_SCHEMA)


def test_custom_wordlists() -> None:
    specific = WordList("tiny", frozenset({"queen"}), frozenset({"king"}))
    corpus = pl.DataFrame({"doc_id": ["a"], "text": ["King queen queen"]})
    row = score_documents(corpus, specific, specific, LEXICON).row(0, named=True)
    assert (row["tc_f"], row["tc_m"]) == (2, 1)
    assert row["neutrality"] == pytest.approx(_zeta(2, 1))
