"""Gender word lists and gender lexicons for the per-document bias scores (SPEC §2, §4.4).

Word lists (``word,group`` lines, group ``f`` or ``m``) come from Rekabsaz & Schedl (2020),
"Do Neural Ranking Models Intensify Gender Bias?" (SIGIR): the 64 gender-definitional words
drive Ψ and ARaB; Rekabsaz, Kopeinik & Schedl (2021), "Societal Biases in Retrieved Contents"
(SIGIR), add 262 first names to them for the document neutrality ζ behind NFaiRR.

A :class:`Lexicon` feeds the LIWC gender metric of Bigdeli et al. (2022), "Bias-aware Fair
Neural Ranking for Addressing Stereotypical Gender Biases" (EDBT). LIWC (Pennebaker et al.)
is proprietary, so a user may pass their own LIWC ``.dic`` file; otherwise the open default
lexicon is the gender-definitional word list.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pipeline.errors import InputError

logger = logging.getLogger(__name__)

WORDLIST_DIR = Path(__file__).resolve().parent.parent / "resources" / "wordlists"
SPECIFIC_PATH = WORDLIST_DIR / "wordlist_genderspecific.txt"
REPRESENTATIVE_PATH = WORDLIST_DIR / "wordlist_gender_representative.txt"
DEFAULT_LEXICON_NAME = "open:wordlist_genderspecific"
WORDLIST_FORMAT = "'word,group' with group 'f' or 'm'"
_WORD_RE = re.compile(r"\w+")
_TOKEN_RE = re.compile(r"\S+")


class WordListNotFoundError(FileNotFoundError):
    """A word list or lexicon file is missing; the message names the path and the params key."""


@dataclass(frozen=True)
class WordList:
    """A two-group gender word list (Rekabsaz & Schedl 2020); words are lowercase."""

    name: str
    female: frozenset[str]
    male: frozenset[str]

    def __post_init__(self) -> None:
        """Reject empty words, words with whitespace and a word in both groups."""
        bad = sorted(w for w in self.female | self.male if not w or any(c.isspace() for c in w))
        if bad:
            raise InputError(
                f"word list {self.name!r}: invalid word {bad[0]!r} (empty or with spaces)"
            )
        both = sorted(self.female & self.male)
        if both:
            raise InputError(
                f"word list {self.name!r}: word {both[0]!r} is in both the female and the male "
                "group"
            )


@dataclass(frozen=True)
class Lexicon:
    """Female / male patterns for the LIWC gender metric (Bigdeli et al. 2022).

    A pattern ending in ``*`` matches every token starting with the rest (LIWC's prefix
    wildcard, ``wom*`` matches ``wom``, ``woman`` and ``women``); any other pattern matches a
    token exactly. Patterns are lowercase. ``name`` is recorded in every output.
    """

    name: str
    female: frozenset[str]
    male: frozenset[str]

    def __post_init__(self) -> None:
        """Reject empty patterns and ``*`` anywhere but at the end."""
        for pattern in self.female | self.male:
            if not pattern.rstrip("*") or "*" in pattern.rstrip("*") or pattern.endswith("**"):
                raise InputError(
                    f"lexicon {self.name!r}: invalid pattern {pattern!r}; "
                    "expected a word, optionally ending in a single '*'"
                )

    def exact(self, group: str) -> frozenset[str]:
        """Patterns of ``group`` ('f' or 'm') without a wildcard."""
        return self._of(group)[0]

    def prefixes(self, group: str) -> tuple[str, ...]:
        """Prefixes (wildcard patterns without the ``*``) of ``group``, sorted."""
        return self._of(group)[1]

    def matches(self, token: str, group: str) -> bool:
        """Whether ``token`` (lowercase) matches a pattern of ``group``."""
        exact, prefixes = self._of(group)
        return token in exact or token.startswith(prefixes)

    def _of(self, group: str) -> tuple[frozenset[str], tuple[str, ...]]:
        if group not in ("f", "m"):
            raise InputError(f"unknown group {group!r}; known: ['f', 'm']")
        return self._split[group]

    @cached_property
    def _split(self) -> dict[str, tuple[frozenset[str], tuple[str, ...]]]:
        """Per group: the exact patterns and the wildcard prefixes."""
        return {
            group: (
                frozenset(p for p in patterns if not p.endswith("*")),
                tuple(sorted(p[:-1] for p in patterns if p.endswith("*"))),
            )
            for group, patterns in (("f", self.female), ("m", self.male))
        }

    @classmethod
    def from_wordlist(cls, wordlist: WordList, name: str | None = None) -> Lexicon:
        """A wildcard-free lexicon with the words of ``wordlist``."""
        return cls(name or f"open:{wordlist.name}", wordlist.female, wordlist.male)


def _read_text(path: str | Path, key: str | None, what: str) -> tuple[Path, str]:
    """Read a UTF-8 file (BOM tolerated); a missing file names the path and params key."""
    path = Path(path)
    if not path.is_file():
        fix = f"set params key '{key}' to an existing file" if key else "pass an existing file"
        raise WordListNotFoundError(f"{what} not found: {path}; {fix}")
    return path, path.read_text(encoding="utf-8-sig")


def _parse_wordlist_line(line: str, lineno: int, path: Path) -> tuple[str, str]:
    """Split one ``word,group`` line; anything else raises a ValueError with the line number."""
    parts = [part.strip() for part in line.lower().split(",")]
    if len(parts) != 2 or parts[1] not in ("f", "m") or not _TOKEN_RE.fullmatch(parts[0]):
        raise InputError(
            f"{path}: line {lineno}: malformed line {line!r}; expected {WORDLIST_FORMAT}"
        )
    return parts[0], parts[1]


def load_wordlist(path: str | Path, key: str | None = None) -> WordList:
    """Load a ``word,group`` word list (Rekabsaz & Schedl 2020), lowercasing every word.

    Blank lines are skipped; a missing final newline is fine. ``key`` is the params.yaml key
    that names the file (e.g. ``score.wordlist_specific``), quoted when the file is missing.
    A malformed line or a word in both groups raises ``ValueError`` naming the file.
    """
    path, text = _read_text(path, key, "word list")
    groups: dict[str, dict[str, int]] = {"f": {}, "m": {}}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        word, group = _parse_wordlist_line(line, lineno, path)
        other = groups["m" if group == "f" else "f"]
        if word in other:
            raise InputError(
                f"{path}: word {word!r} is in both the female and the male group "
                f"(lines {min(other[word], lineno)} and {max(other[word], lineno)})"
            )
        groups[group].setdefault(word, lineno)
    wordlist = WordList(path.stem, frozenset(groups["f"]), frozenset(groups["m"]))
    logger.debug(
        "loaded %s: %d female, %d male words", path, len(wordlist.female), len(wordlist.male)
    )
    return wordlist


def _parse_dic_header(lines: list[str], path: Path) -> tuple[dict[str, str], int]:
    """Parse the ``%``-delimited category header: category number → name, and the body start."""
    starts = [i for i, line in enumerate(lines) if line.strip() == "%"]
    first_content = next((i for i, line in enumerate(lines) if line.strip()), None)
    if len(starts) < 2 or starts[0] != first_content:
        raise InputError(
            f"{path}: not a LIWC .dic file; expected a category header between two '%' lines"
        )
    categories: dict[str, str] = {}
    for i in range(starts[0] + 1, starts[1]):
        fields = lines[i].split()
        if not fields:
            continue
        if len(fields) < 2 or not fields[0].isdigit():
            raise InputError(
                f"{path}: line {i + 1}: malformed category line {lines[i]!r}; "
                "expected 'number<TAB>name'"
            )
        categories[fields[0]] = fields[1]
    return categories, starts[1] + 1


def _parse_dic_entry(line: str) -> tuple[str, list[str]]:
    """Split an entry line into its (lowercased) pattern and its numeric category fields.

    Tab-separated lines take the first field as the pattern (phrases may contain spaces);
    other lines split on whitespace and take the fields before the first number. Non-numeric
    fields after the pattern (LIWC2015's conditional entries) are ignored.
    """
    if "\t" in line:
        pattern, *rest = line.split("\t")
        fields = " ".join(rest).split()
    else:
        words = line.split()
        cut = next((i for i, w in enumerate(words) if i > 0 and w.isdigit()), len(words))
        pattern, fields = " ".join(words[:cut]), words[cut:]
    return pattern.strip().lower(), [field for field in fields if field.isdigit()]


def load_liwc_dic(path: str | Path, key: str | None = None) -> Lexicon:
    """Load the ``female`` / ``male`` categories of a LIWC ``.dic`` file (Pennebaker et al.).

    The file has a header between two ``%`` lines (``number<TAB>name``), then one entry per
    line, ``pattern<TAB>cat<TAB>cat…``. Category names match case-insensitively; a file
    without both raises ``ValueError`` naming the file and the categories it has. Patterns
    that can never equal a ``\\w+`` token (e.g. ``she's``) are kept but logged as a warning.
    """
    path, text = _read_text(path, key, "LIWC dictionary")
    lines = text.splitlines()
    categories, body = _parse_dic_header(lines, path)
    wanted = {name.lower(): num for num, name in categories.items()}
    if "female" not in wanted or "male" not in wanted:
        raise InputError(
            f"{path}: LIWC dictionary needs categories 'female' and 'male'; "
            f"found: {sorted(categories.values())}"
        )
    found: dict[str, set[str]] = {"f": set(), "m": set()}
    for line in lines[body:]:
        if not line.strip():
            continue
        pattern, cats = _parse_dic_entry(line)
        for group, name in (("f", "female"), ("m", "male")):
            if wanted[name] in cats:
                found[group].add(pattern)
    _warn_unmatchable(path, found["f"] | found["m"])
    return Lexicon(f"liwc:{path.name}", frozenset(found["f"]), frozenset(found["m"]))


def _warn_unmatchable(path: Path, patterns: set[str]) -> None:
    """Log the patterns that no ``\\w+`` token can match (SPEC §4.4 tokenises by ``\\w+``)."""
    bad = sorted(p for p in patterns if not _WORD_RE.fullmatch(p.removesuffix("*")))
    if bad:
        logger.warning(
            "%s: %d female/male patterns can never match a \\w+ token and are ignored in "
            "effect: %s",
            path,
            len(bad),
            bad[:20],
        )


def default_lexicon() -> Lexicon:
    """The open default lexicon: the shipped gender-definitional word list, no wildcards."""
    return Lexicon.from_wordlist(load_wordlist(SPECIFIC_PATH), name=DEFAULT_LEXICON_NAME)


def load_lexicon(path: str | Path | None, key: str | None = None) -> Lexicon:
    """A user's LIWC ``.dic`` file when ``path`` is given, else :func:`default_lexicon`."""
    return default_lexicon() if path is None else load_liwc_dic(path, key)
