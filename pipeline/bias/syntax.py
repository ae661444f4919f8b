"""Lu (2010) syntactic-complexity proxies from a spaCy dependency parse (SPEC §3, optional).

EqualizeIR (Cheng & Amiri, seed 001, Appendix B Table 4) averages Lu's L2 Syntactic
Complexity Analyzer indices (Lu 2010, "Automatic analysis of syntactic complexity in second
language writing") with the lexical ones. Lu counts Tregex patterns on constituency trees; we
count their dependency-parse counterparts on the Doc of a spaCy pipeline that the user names in
``score.complexity_parser`` and installs from Explosion's release (no parser model installs
from PyPI from its publisher: docs/dependencies.md). spaCy is the optional extra ``syntax``.

Counts over the tokens of one query (``punct`` / space tokens are not words), with spaCy's
English (ClearNLP) dependency labels:

- **W** words: tokens that are neither punctuation nor space.
- **S** sentences: ``doc.sents`` (one per root of the parse).
- **C** clauses: every sentence root, plus every other token with a subject child (``nsubj``,
  ``nsubjpass``, ``csubj``, ``csubjpass``, ``expl``). Lu's clause is "a structure with a
  subject and a finite verb"; a query is usually a fragment ("cheap flights paris", "how to
  get a job") with no subject, so Lu's count would be 0 and every per-clause ratio undefined.
  We count a fragment's root as one clause instead (so C ≥ S ≥ 1 for a query with words).
- **DC** dependent clauses: clauses (as above, not roots) attached as ``ccomp``, ``advcl``,
  ``relcl``, ``acl``, ``csubj`` or ``csubjpass`` (Lu: finite adjective, adverbial or nominal
  clauses); clauses attached as ``conj`` / ``parataxis`` are coordinated independent clauses.
- **CP** coordinate phrases (Lu: ``ADJP|ADVP|NP|VP < CC``): a noun, proper noun, pronoun,
  adjective, adverb, verb or auxiliary that is not itself a ``conj`` and has at least one
  ``conj`` child that is not a clause (a chain "cats, dogs and birds" is one phrase; "I came
  and he saw" coordinates clauses, not phrases).
- **CN** complex nominals (Lu's three kinds): (1) a noun or proper noun with an adjective,
  possessive, prepositional, relative-clause, participle or appositive modifier (a child
  ``amod``, ``poss``, ``prep``, ``relcl``, ``acl`` or ``appos``; a noun-noun ``compound`` is
  not one, as Lu's ``NP < NN NN`` is not); (2) nominal clauses and (3) clausal subjects
  (gerunds, infinitives): a token attached as ``ccomp``, ``csubj`` or ``csubjpass``.
- **VP** verb phrases: every ``VERB``, and every ``AUX`` that heads its phrase (a copula: not
  attached as ``aux`` / ``auxpass``); finite and non-finite, as Lu counts them.
- **depth**: arcs from a word up to its sentence root (a root has depth 0).

Indices (``SYNTACTIC_INDICES``): ``mlc`` = W/C (mean length of clause), ``c_s`` = C/S,
``dc_c`` = DC/C, ``cp_c`` = CP/C, ``cn_c`` = CN/C, ``vp_s`` = VP/S, ``max_dep_depth`` = the
largest depth of a word. A query without words has every index null. They are proxies: the
clause and VP counts follow the parse, not Lu's Tregex patterns, and Lu's T-unit indices (MLT,
C/T, CT/T, DC/T, T/S, CP/T, CN/T, VP/T) are not computed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline import schemas
from pipeline.errors import InputError, SetupError

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

logger = logging.getLogger(__name__)

PARAM_KEY = "score.complexity_parser"
SYNTACTIC_INDICES = schemas.SYNTACTIC_INDICES
"""Lu (2010) syntactic proxies, in the order :func:`syntactic_indices` writes them."""

SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"})
DEPENDENT_CLAUSE_DEPS = frozenset({"ccomp", "advcl", "relcl", "acl", "csubj", "csubjpass"})
PHRASE_POS = frozenset({"NOUN", "PROPN", "PRON", "ADJ", "ADV", "VERB", "AUX"})
NOUN_POS = frozenset({"NOUN", "PROPN"})
NOMINAL_MODIFIER_DEPS = frozenset({"amod", "poss", "prep", "relcl", "acl", "appos"})
NOMINAL_CLAUSE_DEPS = frozenset({"ccomp", "csubj", "csubjpass"})
AUX_DEPS = frozenset({"aux", "auxpass"})

INSTALL_HINT = (
    "install a spaCy pipeline with a dependency parser from Explosion's release, e.g. "
    "`.venv/bin/python -m spacy download en_core_web_sm` (or `pip install` the wheel from "
    "https://github.com/explosion/spacy-models/releases), or set "
    f"`{PARAM_KEY}: null` in params.yaml to use the lexical indices only"
)


@dataclass(frozen=True)
class Counts:
    """Lu (2010) unit counts of one parsed query (definitions in the module docstring)."""

    words: int
    sentences: int
    clauses: int
    dependent_clauses: int
    coordinate_phrases: int
    complex_nominals: int
    verb_phrases: int
    max_depth: int


def _is_word(t: Token) -> bool:
    return not (t.is_punct or t.is_space or t.dep_ == "punct")


def _is_clause(t: Token) -> bool:
    return t.head.i == t.i or any(c.dep_ in SUBJECT_DEPS for c in t.children)


def _depth(t: Token) -> int:
    depth = 0
    while t.head.i != t.i:
        t = t.head
        depth += 1
    return depth


def _is_coordinate_phrase(t: Token) -> bool:
    if t.dep_ == "conj" or t.pos_ not in PHRASE_POS:
        return False
    return any(c.dep_ == "conj" and not _is_clause(c) for c in t.children)


def _is_complex_nominal(t: Token) -> bool:
    if t.dep_ in NOMINAL_CLAUSE_DEPS:
        return True
    return t.pos_ in NOUN_POS and any(c.dep_ in NOMINAL_MODIFIER_DEPS for c in t.children)


def _is_verb_phrase(t: Token) -> bool:
    return t.pos_ == "VERB" or (t.pos_ == "AUX" and t.dep_ not in AUX_DEPS)


def counts(doc: Doc) -> Counts:
    """Count Lu's units on one dependency-parsed Doc."""
    if len(doc) and not doc.has_annotation("DEP"):
        raise InputError(
            f"{PARAM_KEY}: the spaCy pipeline produced no dependency parse (no `parser` "
            f"component); {INSTALL_HINT}"
        )
    words = [t for t in doc if _is_word(t)]
    clauses = [t for t in words if _is_clause(t)]
    return Counts(
        words=len(words),
        sentences=sum(1 for s in doc.sents if any(_is_word(t) for t in s)) if words else 0,
        clauses=len(clauses),
        dependent_clauses=sum(1 for t in clauses if t.dep_ in DEPENDENT_CLAUSE_DEPS),
        coordinate_phrases=sum(1 for t in words if _is_coordinate_phrase(t)),
        complex_nominals=sum(1 for t in words if _is_complex_nominal(t)),
        verb_phrases=sum(1 for t in words if _is_verb_phrase(t)),
        max_depth=max((_depth(t) for t in words), default=0),
    )


def doc_indices(doc: Doc) -> dict[str, float | None]:
    """The ``SYNTACTIC_INDICES`` of one parsed query; all None for a query without words."""
    n = counts(doc)
    if n.words == 0:
        return dict.fromkeys(SYNTACTIC_INDICES)
    c, s = n.clauses, n.sentences  # C >= S >= 1: every sentence root is a clause
    return {
        "mlc": n.words / c,
        "c_s": c / s,
        "dc_c": n.dependent_clauses / c,
        "cp_c": n.coordinate_phrases / c,
        "cn_c": n.complex_nominals / c,
        "vp_s": n.verb_phrases / s,
        "max_dep_depth": float(n.max_depth),
    }


def syntactic_indices(texts: Sequence[str | None], parse: Callable[[str], Any]) -> pl.DataFrame:
    """One row per text, the Float64 columns ``SYNTACTIC_INDICES``; ``parse`` maps a text to
    its spaCy Doc (a loaded pipeline, or any callable returning a parsed Doc)."""
    rows = [
        doc_indices(parse(t)) if t and t.strip() else dict.fromkeys(SYNTACTIC_INDICES)
        for t in texts
    ]
    return pl.DataFrame(rows, schema=dict.fromkeys(SYNTACTIC_INDICES, pl.Float64), orient="row")


def load_parser(name: str) -> Any:
    """Load the installed spaCy pipeline ``name`` (a package name or a path), keeping only the
    components the parse needs; a clear error naming ``score.complexity_parser`` otherwise."""
    try:
        import spacy
    except ImportError as err:
        raise SetupError(
            f"{PARAM_KEY} is {name!r} but spaCy is not installed: install the optional extra "
            f"with `.venv/bin/pip install -e '.[syntax]'`, then {INSTALL_HINT}"
        ) from err
    try:
        nlp = spacy.load(name, exclude=["ner", "lemmatizer", "textcat", "textcat_multilabel"])
    except OSError as err:
        raise InputError(
            f"{PARAM_KEY}: no installed spaCy pipeline named {name!r} ({err}); {INSTALL_HINT}"
        ) from err
    if "parser" not in nlp.pipe_names:
        raise InputError(
            f"{PARAM_KEY}: the spaCy pipeline {name!r} has no dependency parser (components "
            f"{nlp.pipe_names}); {INSTALL_HINT}"
        )
    meta = nlp.meta
    logger.info(
        "query complexity: spaCy pipeline %s %s (%s, %s) for Lu (2010) syntactic indices",
        meta.get("name", name),
        meta.get("version", "?"),
        meta.get("author", "unknown author"),
        meta.get("license", "unknown licence"),
    )
    return nlp
