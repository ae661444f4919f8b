"""Query linguistic complexity and bins for EqualizeIR (SPEC §3)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipeline.bias.complexity import (
    BINS,
    LEXICAL_INDICES,
    available_indices,
    lexical_indices,
    query_complexity,
    syllables,
)


def test_indices_hand_computed() -> None:
    # tokens: the cat sat on the mat -> N = 6, V = 5; function words: the, on, the
    got = lexical_indices("The cat sat on the mat.")
    n, v = 6, 5
    assert got == pytest.approx(
        {
            "ttr": v / n,
            "cttr": v / math.sqrt(2 * n),
            "rttr": v / math.sqrt(n),
            "log_ttr": math.log(v) / math.log(n),
            "uber": math.log(n) ** 2 / (math.log(n) - math.log(v)),
            "lexical_density": 3 / 6,
            "mean_word_length": (3 + 3 + 3 + 2 + 3 + 3) / 6,
            "syllables_per_word": 1.0,
        }
    )


def test_one_word_and_empty_queries_do_not_divide_by_zero() -> None:
    one = lexical_indices("Encyclopedia")
    assert one["ttr"] == 1.0 and one["log_ttr"] == 1.0 and one["uber"] is None
    assert one["cttr"] == pytest.approx(1 / math.sqrt(2))
    assert one["syllables_per_word"] == 5.0  # vowel groups e|y|o|e|ia
    assert lexical_indices("") == dict.fromkeys(LEXICAL_INDICES, 0.0)
    assert lexical_indices(None) == dict.fromkeys(LEXICAL_INDICES, 0.0)


@pytest.mark.parametrize(
    ("word", "count"),
    [("the", 1), ("make", 1), ("table", 2), ("agree", 2), ("rhythm", 1), ("2020", 1), ("queue", 1)],
)
def test_syllable_heuristic(word: str, count: int) -> None:
    assert syllables(word) == count


QUERIES = pl.DataFrame(
    {
        "query_id": ["1", "2", "3", "4", "5", "6"],
        "text": [
            "cat cat cat cat",
            "the dog",
            "what is a cat",
            "cheap flights paris",
            "symptoms of chronic obstructive pulmonary disease",
            "constitutional implications of extraterritorial jurisdiction",
        ],
    }
)


def test_bins_by_tertiles() -> None:
    out = query_complexity(QUERIES)
    assert out["query_id"].to_list() == QUERIES["query_id"].to_list()
    norms = [f"{name}_norm" for name in LEXICAL_INDICES]
    assert out.columns == ["query_id", "n_words", *LEXICAL_INDICES, *norms, "complexity", "bin"]
    for column in norms:
        assert out[column].min() >= 0.0 and out[column].max() <= 1.0  # type: ignore[operator]
    # complexity is the mean of the normalised indices
    assert out["complexity"].to_list() == pytest.approx(
        out.select(pl.mean_horizontal(norms)).to_series().to_list()
    )
    # six distinct complexities -> two queries per tertile, in complexity order
    ranked = out.sort("complexity")["bin"].to_list()
    assert ranked == ["easy", "easy", "medium", "medium", "hard", "hard"]
    assert out.filter(pl.col("query_id") == "1")["bin"].item() == "easy"
    assert out.filter(pl.col("query_id") == "6")["bin"].item() == "hard"


def test_uber_without_repeats_normalises_to_max_and_constants_to_zero() -> None:
    out = query_complexity(QUERIES)
    repeats = out.filter(pl.col("query_id") == "1").row(0, named=True)
    assert repeats["uber"] == pytest.approx(math.log(4) ** 2 / math.log(4))
    assert repeats["uber_norm"] == 0.0
    assert out.filter(pl.col("query_id") != "1")["uber_norm"].to_list() == [1.0] * 5
    same = query_complexity(pl.DataFrame({"query_id": ["a", "b"], "text": ["red car", "blue car"]}))
    assert same["ttr_norm"].to_list() == [0.0, 0.0]
    assert set(same["bin"]) <= set(BINS)


def test_available_indices_and_errors() -> None:
    assert available_indices() == LEXICAL_INDICES
    empty = query_complexity(QUERIES.head(0))
    assert empty.height == 0 and empty.columns[-2:] == ["complexity", "bin"]
    with pytest.raises(ValueError, match=r"queries lack column\(s\) \['text'\]"):
        query_complexity(QUERIES.drop("text"))
