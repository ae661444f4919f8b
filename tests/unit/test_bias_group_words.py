"""Gender words per document group (issue 29): the transfer collection's confound, measured."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline import schemas
from pipeline.bias.group_words import group_words, group_words_line
from pipeline.bias.lexicon import load_lexicon, load_wordlist
from pipeline.bias.scoring import score_documents
from pipeline.data.genderbias_qa import load_genderbias_qa
from pipeline.errors import InputError
from pipeline.params import ScoreParams


def _scores(tc_f: list[int], tc_m: list[int], zeta: list[float]) -> pl.DataFrame:
    n = len(tc_f)
    return pl.DataFrame({"doc_id": [f"d{i}" for i in range(n)], "tc_f": tc_f, "tc_m": tc_m,
                         "neutrality": zeta})  # fmt: skip


def test_counts_per_group_by_hand() -> None:
    """q1: F documents 3 and 1 words (mean 2), M 1 → F more; q2: F 0, M 2 → M more;
    d5 (no group) and d6 (not judged) are left out."""
    corpus = pl.DataFrame({"doc_id": [f"d{i}" for i in range(7)],
                           "group": ["F", "F", "M", "F", "M", None, "M"]})  # fmt: skip
    scores = _scores([3, 1, 0, 0, 0, 9, 0], [0, 0, 1, 0, 2, 0, 5],
                     [0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0])  # fmt: skip
    qrels = pl.DataFrame({"query_id": ["q1", "q1", "q1", "q2", "q2", "q2"],
                          "doc_id": ["d0", "d1", "d2", "d3", "d4", "d5"],
                          "relevance": [1] * 6})  # fmt: skip
    table = group_words(corpus, scores, qrels)
    schemas.validate(table.to_arrow(), schemas.GROUP_WORDS, "test")
    f, m = table.row(0, named=True), table.row(1, named=True)
    assert (f["group"], f["documents"], f["queries"], f["queries_more"]) == ("F", 3, 2, 1)
    assert f["gender_words"] == pytest.approx(4 / 3) and f["male_words"] == 0.0
    assert f["neutral_share"] == pytest.approx(2 / 3)
    assert (m["documents"], m["queries_more"], m["gender_words"]) == (2, 1, pytest.approx(1.5))
    assert "more in F on 1 of 2 queries" in group_words_line(table)
    with pytest.raises(InputError, match="no `group` column"):
        group_words(corpus.drop("group"), scores, qrels)


def test_genderbias_qa_female_answers_carry_more_gender_words() -> None:
    """The confound the transfer Findings state (issue 29), on the shipped test split with
    the default `score` settings: F 5.24 vs M 3.95 words per answer, more in F on 104 of 145
    questions, 1-4% of the answers neutral."""
    s = ScoreParams()
    coll = load_genderbias_qa(splits=("test",))
    scores = score_documents(coll.corpus, load_wordlist(s.wordlist_specific),
                             load_wordlist(s.wordlist_representative), load_lexicon(None),
                             tokenizer=s.tokenizer, tau=s.neutrality_tau)  # fmt: skip
    table = group_words(coll.corpus, scores, coll.qrels)
    f, m = table.row(0, named=True), table.row(1, named=True)
    assert f["gender_words"] == pytest.approx(5.238, abs=1e-3)
    assert m["gender_words"] == pytest.approx(3.952, abs=1e-3)
    assert (f["female_words"], m["male_words"]) == (pytest.approx(5.086, abs=1e-3),
                                                    pytest.approx(3.941, abs=1e-3))  # fmt: skip
    assert (f["queries_more"], m["queries_more"], f["queries"]) == (104, 28, 145)
    assert 0.01 <= f["neutral_share"] < m["neutral_share"] <= 0.04


def test_the_transfer_section_states_the_confound(tmp_path: Path) -> None:
    from pipeline import io
    from pipeline.report.transfer import transfer_notes

    assert transfer_notes(tmp_path) == []  # no table: nothing to state
    table = pl.DataFrame({"group": ["F", "M"], "documents": [290, 290], "queries": [145, 145],
                          "gender_words": [5.24, 3.95], "female_words": [5.09, 0.01],
                          "male_words": [0.15, 3.94], "neutral_share": [0.01, 0.04],
                          "queries_more": [104, 28]})  # fmt: skip
    io.write_table(table, tmp_path / "group_words.parquet", schemas.GROUP_WORDS)
    (note,) = transfer_notes(tmp_path)
    assert "5.24 in the F documents, 3.95 in the M ones" in note
    assert "more in F on 104 of 145 queries" in note and "by construction" in note
