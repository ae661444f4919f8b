"""Ψ/ζ/lexicon scoring of synthetic passages: ``score_documents`` vs a per-document loop.

Both sides compute the same table (SPEC §2: tc/tf/bool counts and Ψ for the gender-specific
list, ζ from the representative list, LIWC-style lexicon shares). Passages are 60 words drawn
from the shipped word lists (≈10%) and filler words. The naive side is
``score_documents_naive``: one Python loop over documents and tokens. Ours is vectorised
polars over 100k-document slices. The outputs are compared for equality on the first 20k
documents before timing.

    python -m benchmarks.bench_scoring [--docs 1000000] [--repeats 3]
"""

from __future__ import annotations

import logging
import random

import polars as pl
from polars.testing import assert_frame_equal

from benchmarks.common import parser, peak_rss_mib, report, setup_logging, timed, write_row
from benchmarks.naive_scoring import score_documents_naive
from pipeline.bias.lexicon import default_lexicon, load_wordlist
from pipeline.bias.scoring import score_documents

log = logging.getLogger("benchmarks.scoring")
WORDLISTS = "pipeline/resources/wordlists"
FILLER = [
    *("the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with"),
    *("be", "by", "on", "not", "this", "are", "or", "from", "at", "which", "work", "city"),
    *("river", "report", "system", "market", "water", "people", "study", "music", "school"),
]


def corpus(n: int, words: int, seed: int = 0) -> pl.DataFrame:
    specific = load_wordlist(f"{WORDLISTS}/wordlist_genderspecific.txt")
    gendered = sorted(specific.female | specific.male)
    rng = random.Random(seed)
    vocab = FILLER * 9 + gendered[:200]  # ≈10% gendered tokens
    texts = [" ".join(rng.choices(vocab, k=words)) for _ in range(n)]
    return pl.DataFrame({"doc_id": [str(i) for i in range(n)], "text": texts})


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--docs", type=int, default=1_000_000)
    p.add_argument("--words", type=int, default=60)
    args = p.parse_args()
    setup_logging()
    docs = corpus(args.docs, args.words)
    lists = (
        load_wordlist(f"{WORDLISTS}/wordlist_genderspecific.txt"),
        load_wordlist(f"{WORDLISTS}/wordlist_gender_representative.txt"),
        default_lexicon(),
    )
    check = docs.head(20_000)
    assert_frame_equal(score_documents(check, *lists), score_documents_naive(check, *lists))
    rss_before = peak_rss_mib()
    ours = [timed(lambda: score_documents(docs, *lists))[0] for _ in range(args.repeats)]
    rss_ours = peak_rss_mib()
    naive = [timed(lambda: score_documents_naive(docs, *lists))[0] for _ in range(args.repeats)]
    row = report("scoring", "s", ours, naive, higher=False)
    row |= {
        "docs": args.docs,
        "words_per_doc": args.words,
        "ours_s": ours,
        "naive_s": naive,
        "ours_us_per_doc": 1e6 * row["ours_median"] / args.docs,
        "extrapolated_8_8M_s": row["ours_median"] * 8.8e6 / args.docs,
        "peak_rss_mib_before_scoring": rss_before,
        "peak_rss_mib_after_ours": rss_ours,
    }
    write_row("scoring", row, args.out)


if __name__ == "__main__":
    main()
