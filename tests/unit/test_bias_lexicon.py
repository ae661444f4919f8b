"""Word lists and LIWC lexicons (SPEC §2, §4.4): loading, validation and error messages."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from pipeline.bias.lexicon import (
    DEFAULT_LEXICON_NAME,
    REPRESENTATIVE_PATH,
    SPECIFIC_PATH,
    Lexicon,
    WordList,
    WordListNotFoundError,
    default_lexicon,
    load_lexicon,
    load_liwc_dic,
    load_wordlist,
)

LIWC_DIC = (
    "%\n"
    "1\tfunct\n"
    "2\tfemale\n"
    "3\tMale\n"
    "4\tfamily\n"
    "%\n"
    "wom*\t2\n"
    "she\t1\t2\n"
    "mother\t2\t4\n"
    "he\t1\t3\n"
    "brother*\t3\t4\n"
    "the\t1\n"
    "she's\t1\t2\n"
    "girl* 2\n"
    "like\t(02 134)125/464\t1\n"
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_lists_have_the_published_sizes() -> None:
    specific = load_wordlist(SPECIFIC_PATH)
    representative = load_wordlist(REPRESENTATIVE_PATH)
    assert (len(specific.female), len(specific.male)) == (32, 32)
    assert (len(representative.female), len(representative.male)) == (163, 163)
    assert specific.female <= representative.female
    assert specific.male <= representative.male
    # names are lowercased on load
    assert "john" in representative.male and "mary" in representative.female
    assert all(w == w.lower() for w in representative.female | representative.male)


def test_blank_lines_case_crlf_and_missing_final_newline(tmp_path: Path) -> None:
    path = _write(tmp_path, "list.txt", "Boy,m\r\n\r\n  \nGIRL,F\r\nmr.,m")
    wordlist = load_wordlist(path)
    assert wordlist == WordList("list", frozenset({"girl"}), frozenset({"boy", "mr."}))


@pytest.mark.parametrize("bad_line", ["girl;f", "girl,x", "girl", ",f", "two words,f", "a,f,m"])
def test_malformed_line_names_file_line_number_and_format(tmp_path: Path, bad_line: str) -> None:
    path = _write(tmp_path, "list.txt", f"boy,m\n\n{bad_line}\n")
    expected = (
        f"{path}: line 3: malformed line {bad_line!r}; expected 'word,group' with group 'f' or 'm'"
    )
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_wordlist(path)


def test_word_in_both_groups_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "list.txt", "lee,m\nann,f\nLee,f\n")
    expected = f"{path}: word 'lee' is in both the female and the male group (lines 1 and 3)"
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_wordlist(path)


def test_wordlist_constructed_with_overlap_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"word list 'x': word 'lee' is in both"):
        WordList("x", frozenset({"lee", "ann"}), frozenset({"lee"}))


def test_missing_wordlist_names_path_and_params_key(tmp_path: Path) -> None:
    path = tmp_path / "nope.txt"
    expected = (
        f"word list not found: {path}; set params key 'score.wordlist_specific' to an existing file"
    )
    with pytest.raises(WordListNotFoundError, match=re.escape(expected)):
        load_wordlist(path, key="score.wordlist_specific")
    with pytest.raises(FileNotFoundError, match=re.escape("pass an existing file")):
        load_wordlist(path)


def test_liwc_dic_with_wildcards(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _write(tmp_path, "my.dic", LIWC_DIC)
    with caplog.at_level(logging.WARNING, logger="pipeline.bias.lexicon"):
        lexicon = load_liwc_dic(path)
    assert lexicon.name == "liwc:my.dic"
    assert lexicon.female == {"wom*", "she", "mother", "she's", "girl*"}
    assert lexicon.male == {"he", "brother*"}
    assert lexicon.prefixes("f") == ("girl", "wom") and lexicon.exact("m") == {"he"}
    assert lexicon.matches("women", "f") and lexicon.matches("wom", "f")
    assert lexicon.matches("brothers", "m") and not lexicon.matches("women", "m")
    assert not lexicon.matches("mothers", "f")  # no wildcard on "mother"
    assert "she's" in caplog.text  # can never equal a \w+ token


def test_liwc_dic_without_gender_categories(tmp_path: Path) -> None:
    path = _write(tmp_path, "other.dic", "%\n1\tposemo\n2\tfamily\n%\nhappy\t1\n")
    expected = (
        f"{path}: LIWC dictionary needs categories 'female' and 'male'; found: ['family', 'posemo']"
    )
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_liwc_dic(path)


def test_liwc_dic_without_header(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.dic", "she\t1\n")
    with pytest.raises(ValueError, match=r"not a LIWC \.dic file"):
        load_liwc_dic(path)


def test_missing_liwc_dic(tmp_path: Path) -> None:
    path = tmp_path / "LIWC2015.dic"
    expected = f"LIWC dictionary not found: {path}; set params key 'score.liwc_dic'"
    with pytest.raises(WordListNotFoundError, match=re.escape(expected)):
        load_lexicon(path, key="score.liwc_dic")


def test_default_lexicon_is_the_open_wordlist() -> None:
    lexicon = default_lexicon()
    assert lexicon.name == DEFAULT_LEXICON_NAME == "open:wordlist_genderspecific"
    specific = load_wordlist(SPECIFIC_PATH)
    assert (lexicon.female, lexicon.male) == (specific.female, specific.male)
    assert lexicon.prefixes("f") == lexicon.prefixes("m") == ()
    assert load_lexicon(None) == lexicon


@pytest.mark.parametrize("pattern", ["*", "", "a*b", "wom**"])
def test_invalid_lexicon_pattern(pattern: str) -> None:
    with pytest.raises(ValueError, match="invalid pattern"):
        Lexicon("x", frozenset({pattern}), frozenset())


def test_unknown_group() -> None:
    with pytest.raises(ValueError, match=re.escape("unknown group 'x'; known: ['f', 'm']")):
        default_lexicon().exact("x")
