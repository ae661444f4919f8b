"""Lu (2010) syntactic-complexity proxies on hand-built dependency parses (SPEC §3).

No parser model is downloaded: each Doc is built by hand with spaCy's ``Doc(vocab, words,
heads, deps, pos)`` (heads are absolute token indices; a root is its own head).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
import spacy
import yaml
from spacy.tokens import Doc

from pipeline import schemas
from pipeline.bias.complexity import INDICES, query_complexity
from pipeline.bias.syntax import (
    SYNTACTIC_INDICES,
    Counts,
    counts,
    doc_indices,
    load_parser,
    syntactic_indices,
)
from pipeline.params import parse_params

ROOT = Path(__file__).resolve().parents[2]

VOCAB = spacy.blank("en").vocab


def _doc(rows: list[tuple[str, int, str, str]]) -> Doc:
    """Rows of ``(word, head index, dep, pos)``."""
    words, heads, deps, pos = (list(col) for col in zip(*rows, strict=True))
    return Doc(VOCAB, words=words, heads=heads, deps=deps, pos=pos)


# "the man who left bought cheap books and pens ."
RELATIVE = _doc(
    [
        ("the", 1, "det", "DET"),
        ("man", 4, "nsubj", "NOUN"),
        ("who", 3, "nsubj", "PRON"),
        ("left", 1, "relcl", "VERB"),
        ("bought", 4, "ROOT", "VERB"),
        ("cheap", 6, "amod", "ADJ"),
        ("books", 4, "dobj", "NOUN"),
        ("and", 6, "cc", "CCONJ"),
        ("pens", 6, "conj", "NOUN"),
        (".", 4, "punct", "PUNCT"),
    ]
)
# "cheap flights to paris": a fragment, no subject, no verb
FRAGMENT = _doc(
    [
        ("cheap", 1, "amod", "ADJ"),
        ("flights", 1, "ROOT", "NOUN"),
        ("to", 1, "prep", "ADP"),
        ("paris", 2, "pobj", "PROPN"),
    ]
)
# "I think she is right and he agrees . Dogs , cats and birds will sleep ."
TWO_SENTENCES = _doc(
    [
        ("I", 1, "nsubj", "PRON"),
        ("think", 1, "ROOT", "VERB"),
        ("she", 3, "nsubj", "PRON"),
        ("is", 1, "ccomp", "AUX"),
        ("right", 3, "acomp", "ADJ"),
        ("and", 1, "cc", "CCONJ"),
        ("he", 7, "nsubj", "PRON"),
        ("agrees", 1, "conj", "VERB"),
        (".", 1, "punct", "PUNCT"),
        ("Dogs", 15, "nsubj", "NOUN"),
        (",", 9, "punct", "PUNCT"),
        ("cats", 9, "conj", "NOUN"),
        ("and", 11, "cc", "CCONJ"),
        ("birds", 11, "conj", "NOUN"),
        ("will", 15, "aux", "AUX"),
        ("sleep", 15, "ROOT", "VERB"),
        (".", 15, "punct", "PUNCT"),
    ]
)


def test_counts_of_a_relative_clause_and_a_coordinate_object() -> None:
    # words: 9 (not "."); clauses: root "bought" + "left" (subject "who"); dependent: "left"
    # (relcl); coordinate phrase: "books and pens"; complex nominals: "man" (relcl child),
    # "books" (amod child); VPs: "left", "bought"; depth of "who": who→left→man→bought = 3
    assert counts(RELATIVE) == Counts(
        words=9,
        sentences=1,
        clauses=2,
        dependent_clauses=1,
        coordinate_phrases=1,
        complex_nominals=2,
        verb_phrases=2,
        max_depth=3,
    )
    assert doc_indices(RELATIVE) == pytest.approx(
        {
            "mlc": 9 / 2,
            "c_s": 2.0,
            "dc_c": 1 / 2,
            "cp_c": 1 / 2,
            "cn_c": 2 / 2,
            "vp_s": 2.0,
            "max_dep_depth": 3.0,
        }
    )


def test_a_fragment_is_one_clause() -> None:
    # no subject: the root "flights" is the only clause; "flights" has amod and prep children
    # (a complex nominal); no verb; depth of "paris": paris→to→flights = 2
    assert counts(FRAGMENT) == Counts(4, 1, 1, 0, 0, 1, 0, 2)
    assert doc_indices(FRAGMENT) == pytest.approx(
        {
            "mlc": 4.0,
            "c_s": 1.0,
            "dc_c": 0.0,
            "cp_c": 0.0,
            "cn_c": 1.0,
            "vp_s": 0.0,
            "max_dep_depth": 2.0,
        }
    )


def test_two_sentences_coordinated_clauses_and_a_noun_chain() -> None:
    # words 8 + 6 = 14; sentences 2; clauses: think, is (she), agrees (he), sleep (Dogs) = 4;
    # dependent: "is" (ccomp) only, "agrees" is a coordinated (conj) clause; coordinate
    # phrases: "Dogs, cats and birds" = 1 (think+agrees coordinates clauses, not phrases);
    # complex nominals: the ccomp clause "is" = 1; VPs: think, is (copula), agrees, sleep = 4
    # ("will" is an aux); depth of "and"/"birds": →cats→Dogs→sleep = 3
    assert counts(TWO_SENTENCES) == Counts(14, 2, 4, 1, 1, 1, 4, 3)
    assert doc_indices(TWO_SENTENCES) == pytest.approx(
        {
            "mlc": 14 / 4,
            "c_s": 4 / 2,
            "dc_c": 1 / 4,
            "cp_c": 1 / 4,
            "cn_c": 1 / 4,
            "vp_s": 4 / 2,
            "max_dep_depth": 3.0,
        }
    )


DOCS = {"q relative": RELATIVE, "q fragment": FRAGMENT, "q two sentences": TWO_SENTENCES}


def _parse(text: str) -> Any:
    return DOCS[text]


def test_query_complexity_normalises_and_averages_the_syntactic_indices() -> None:
    queries = pl.DataFrame({"query_id": ["r", "f", "t"], "text": list(DOCS)})
    out = query_complexity(queries, parse=_parse)
    assert out["mlc"].to_list() == pytest.approx([4.5, 4.0, 3.5])
    assert out["mlc_norm"].to_list() == pytest.approx([1.0, 0.5, 0.0])
    assert out["c_s_norm"].to_list() == pytest.approx([1.0, 0.0, 1.0])
    assert out["dc_c_norm"].to_list() == pytest.approx([1.0, 0.0, 0.5])
    assert out["cn_c_norm"].to_list() == pytest.approx([1.0, 1.0, 0.0])
    assert out["max_dep_depth_norm"].to_list() == pytest.approx([1.0, 0.0, 1.0])
    used = out["indices"][0].split(",")
    assert set(SYNTACTIC_INDICES) <= set(used)
    assert used[-len(SYNTACTIC_INDICES) :] == list(SYNTACTIC_INDICES)  # after the lexical ones
    assert out["complexity"].to_list() == pytest.approx(
        out.select(pl.mean_horizontal(f"{n}_norm" for n in used)).to_series().to_list()
    )
    schemas.validate(out.to_arrow(), schemas.QUERY_COMPLEXITY, "test")


def test_constant_syntactic_indices_are_dropped_and_null_keeps_lexical_only() -> None:
    queries = pl.DataFrame({"query_id": ["1", "2"], "text": ["cheap flights paris", "red car"]})
    out = query_complexity(queries, parse=lambda _text: FRAGMENT)  # the same parse twice
    for name in SYNTACTIC_INDICES:
        assert f"{name} (constant over the queries)" in out["dropped_indices"][0]
        assert name not in out.columns
    lexical = query_complexity(queries)
    # every syntactic index dropped: the lexical result, but for their drop reasons
    assert lexical.drop("dropped_indices").equals(out.drop("dropped_indices"))
    assert [c for c in lexical.columns if c in SYNTACTIC_INDICES] == []
    assert set(lexical["indices"][0].split(",")) <= set(INDICES)


def test_a_query_without_words_has_null_syntactic_indices() -> None:
    frame = syntactic_indices(["", None, "q fragment"], _parse)
    assert frame.columns == list(SYNTACTIC_INDICES)
    assert frame.row(0) == (None,) * len(SYNTACTIC_INDICES)
    assert frame.row(1) == (None,) * len(SYNTACTIC_INDICES)
    assert frame["mlc"][2] == 4.0


def test_an_unparsed_doc_is_an_error_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"score\.complexity_parser.*no dependency parse"):
        counts(Doc(VOCAB, words=["cheap", "flights"]))


def test_a_missing_pipeline_names_the_key_and_the_install() -> None:
    with pytest.raises(ValueError, match=r"score\.complexity_parser.*no_such_pipeline") as err:
        load_parser("no_such_pipeline")
    assert "spacy download en_core_web_sm" in str(err.value)
    assert "complexity_parser: null" in str(err.value)


def test_a_pipeline_without_parser_is_refused(tmp_path: Path) -> None:
    spacy.blank("en").to_disk(tmp_path / "blank_en")
    with pytest.raises(ValueError, match=r"score\.complexity_parser.*has no dependency parser"):
        load_parser(str(tmp_path / "blank_en"))


def test_an_installed_pipeline_with_parser_loads_and_parses(tmp_path: Path) -> None:
    nlp = spacy.blank("en")
    parser: Any = nlp.add_pipe("parser")
    parser.add_label("amod")
    nlp.initialize()  # untrained: its parses are arbitrary, only the plumbing is checked
    nlp.to_disk(tmp_path / "tiny_parser")
    parse = load_parser(str(tmp_path / "tiny_parser"))
    assert "parser" in parse.pipe_names
    frame = syntactic_indices(["cheap flights to paris", ""], parse)
    assert frame.row(0)[0] is not None and frame.row(1) == (None,) * len(SYNTACTIC_INDICES)


def test_params_default_is_no_parser() -> None:
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert parse_params(raw).score.complexity_parser is None
    raw["score"]["complexity_parser"] = "en_core_web_sm"
    assert parse_params(raw).score.complexity_parser == "en_core_web_sm"
    del raw["score"]["complexity_parser"]
    assert parse_params(raw).score.complexity_parser is None
