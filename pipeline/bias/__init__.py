"""Gender-bias scoring: word lists, lexicons, tokenisers, per-document scores, query complexity.

Ψ / ARaB (Rekabsaz & Schedl 2020), ζ / NFaiRR (Rekabsaz, Kopeinik & Schedl 2021), the LIWC
gender shares (Bigdeli et al. 2022) and EqualizeIR's query complexity (Cheng & Amiri); see
SPEC §2-§4.4 and the module docstrings for the decisions taken.
"""

from __future__ import annotations

from pipeline.bias.complexity import available_indices, query_complexity
from pipeline.bias.lexicon import (
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
from pipeline.bias.scoring import SCORE_SCHEMA, score_documents, zeta
from pipeline.bias.tokenize import TOKENIZERS, get_tokenizer

__all__ = [
    "REPRESENTATIVE_PATH",
    "SCORE_SCHEMA",
    "SPECIFIC_PATH",
    "TOKENIZERS",
    "Lexicon",
    "WordList",
    "WordListNotFoundError",
    "available_indices",
    "default_lexicon",
    "get_tokenizer",
    "load_lexicon",
    "load_liwc_dic",
    "load_wordlist",
    "query_complexity",
    "score_documents",
    "zeta",
]
