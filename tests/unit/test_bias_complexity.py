"""Query linguistic complexity and bins for EqualizeIR (SPEC §3)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipeline import schemas
from pipeline.bias.complexity import (
    BINS,
    available_indices,
    drop_reason,
    frequent_words,
    query_complexity,
    raw_indices,
)

THREE = pl.DataFrame(
    {
        "query_id": ["a", "b", "c"],
        "text": ["cheap flights paris", "how to get a job", "the cat and the dog"],
    }
)


@pytest.mark.slow
def test_two_indices_hand_computed_on_three_queries() -> None:
    out = query_complexity(THREE)
    # lexical density: tokens outside the function-word list / N
    #   a: cheap flights paris -> 3/3; b: get job -> 2/5; c: cat dog -> 2/5
    assert out["lexical_density"].to_list() == pytest.approx([1.0, 0.4, 0.4])
    assert out["lexical_density_norm"].to_list() == pytest.approx([1.0, 0.0, 0.0])
    # Carroll's corrected TTR T/sqrt(2N): a T=3 N=3; b T=5 N=5; c T=4 N=5
    cttr = [3 / math.sqrt(6), 5 / math.sqrt(10), 4 / math.sqrt(10)]
    assert out["cttr"].to_list() == pytest.approx(cttr)
    lo, hi = min(cttr), max(cttr)
    assert out["cttr_norm"].to_list() == pytest.approx([(v - lo) / (hi - lo) for v in cttr])
    # TTR and Herdan's log TTR of the query with a repeated word
    c = raw_indices("the cat and the dog")
    assert c["ttr"] == pytest.approx(4 / 5)
    assert c["log_ttr"] == pytest.approx(math.log(4) / math.log(5))
    assert c["uber"] == pytest.approx(math.log(5) ** 2 / (math.log(5) - math.log(4)))
    assert c["mls"] == 5.0 and c["ndw"] == 4.0


def test_complexity_is_mean_of_kept_normalised_indices() -> None:
    out = query_complexity(THREE)
    used = out["indices"][0].split(",")
    assert used and set(used) <= set(available_indices())
    assert out["complexity"].to_list() == pytest.approx(
        out.select(pl.mean_horizontal(f"{n}_norm" for n in used)).to_series().to_list()
    )
    schemas.validate(out.to_arrow(), schemas.QUERY_COMPLEXITY, "test")


def test_constant_and_mostly_undefined_indices_are_dropped() -> None:
    same = pl.DataFrame({"query_id": ["1", "2", "3"], "text": ["red car", "blue car", "green car"]})
    out = query_complexity(same)
    dropped = out["dropped_indices"][0]
    for name in ("ttr", "cttr", "ndw", "mls", "lexical_density"):
        assert f"{name} (constant over the queries)" in dropped
        assert name not in out.columns and f"{name}_norm" not in out.columns
        assert name not in out["indices"][0].split(",")
    assert "uber (undefined on 3 of 3 queries)" in dropped
    # mean word length 3.5 / 4 / 4.5 varies, so it is kept and normalised to 0 / 0.5 / 1
    assert out["mean_word_length_norm"].to_list() == pytest.approx([0.0, 0.5, 1.0])


def test_drop_reason() -> None:
    assert drop_reason(pl.Series([1.0, 1.0, None])) == "constant over the queries"
    assert drop_reason(pl.Series([1.0, None, None])) == "undefined on 2 of 3 queries"
    assert drop_reason(pl.Series([1.0, 2.0, None])) is None


def test_sophistication_uses_the_frequent_word_list() -> None:
    assert len(frequent_words()) == 2000 and "job" in frequent_words()
    got = raw_indices("pulmonary disease symptoms")
    soph = [w for w in ("pulmonary", "disease", "symptoms") if w not in frequent_words()]
    assert "pulmonary" in soph
    assert got["ls1"] == pytest.approx(len(soph) / 3)
    assert got["ls2"] == pytest.approx(len(soph) / 3)


def test_undefined_values() -> None:
    one = raw_indices("Encyclopedia")
    assert one["log_ttr"] is None and one["uber"] is None and one["ttr"] == 1.0
    assert raw_indices("") == dict.fromkeys(available_indices())
    assert raw_indices("Is it cheap? Where is it.")["mls"] == 3.0  # 6 words, 2 sentences


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
    assert out.columns[:6] == [
        "query_id",
        "n_words",
        "complexity",
        "bin",
        "indices",
        "dropped_indices",
    ]
    ranked = out.sort("complexity")["bin"].to_list()
    assert ranked == ["easy", "easy", "medium", "medium", "hard", "hard"]
    assert out.filter(pl.col("query_id") == "6")["bin"].item() == "hard"
    assert set(out["bin"]) <= set(BINS)


def test_empty_and_errors() -> None:
    empty = query_complexity(QUERIES.head(0))
    assert empty.height == 0 and "complexity" in empty.columns
    with pytest.raises(ValueError, match=r"queries lack column\(s\) \['text'\]"):
        query_complexity(QUERIES.drop("text"))


def test_quasi_constant_indices_are_dropped_and_length_proxies_named() -> None:
    """ttr is 1 on every query without a repeated word: on 19 of 20 queries here, so it is
    dropped (it would only mark the one query that repeats a word); ndw grows with length."""
    from pipeline.bias.complexity import drop_reason, query_complexity

    assert drop_reason(pl.Series([1.0] * 19 + [0.5])) == "quasi-constant: 1 on 19 of 20 queries"
    assert drop_reason(pl.Series([1.0] * 9 + [0.5])) is None  # 90%: kept
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta",
             "eta", "theta", "iota", "kappa", "lambda", "mu"]  # fmt: skip
    texts = [" ".join(words[: 2 + i % 10]) for i in range(19)] + ["alpha alpha beta"]
    queries = pl.DataFrame({"query_id": [str(i) for i in range(20)], "text": texts})
    out = query_complexity(queries)
    assert "ttr (quasi-constant: 1 on 19 of 20 queries)" in out["dropped_indices"][0]
    assert "ttr" not in out["indices"][0].split(",")
    assert "ndw (ρ +" in out["length_proxies"][0]
