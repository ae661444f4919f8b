"""A synthetic TREC Fair 2022 at full size, in the files and paths ir_datasets reads.

    python -m benchmarks.rehearsal.trec_fair_generate --scale 1 --out HOME

writes into ``HOME/trec-fair/2022/`` (``HOME`` is then an ``IR_DATASETS_HOME``; ir_datasets
uses files at their cache paths as they are, `tests/irds_miniature.py` has the formats):

- ``trec_corpus_20220301_plain.json.gz``: ``scale`` × 6,475,537 articles (ir_datasets'
  count for ``trec-fair/2022``), one JSON object a line: ``id`` (int, ascending, gaps 1–20 as
  Wikipedia page ids), ``title``, ``url``, ``plain``;
- ``trec_2022_articles_discrete.json.gz``: ``scale`` × 6,460,238 metadata records (the total
  of ir_datasets' "pre-loading metadata" bar): ``page_id`` and the ``FairTrec2022Doc`` fields
  (lists, dicts, categories); the articles without one are spread evenly;
- ``trec_2022_train_reldocs.jsonl``: 50 queries, ``scale`` × 2,088,306 relevant articles
  (ir_datasets' qrels count), query sizes falling off as 1/rank (WikiProjects differ a lot).

Sizes (assumptions, each a flag): article text log-normal, median 1,500 bytes, σ 1.25 (mean
≈ 3.3 KB; Wikipedia's plain text, ≈ 21 GB for the real 7.68 GB gzip at a ratio of 2.8),
clipped to 40 B – 300 KB, assembled from a pool of Zipf-worded paragraphs
(``benchmarks.rehearsal.generate``'s vocabulary and gender words), so gzip sees no repeats
within its 32 KB window beyond chance. gzip level 1 (fast to write; the reader's cost is
the decompressed bytes).
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.rehearsal.generate import GenConfig, text_model

log = logging.getLogger("benchmarks.rehearsal.trec_fair_generate")

ARTICLES = 6_475_537  # ir_datasets etc/metadata.json, trec-fair/2022 docs count
METADATA = 6_460_238  # ir_datasets JsonlDocs._docs_iter_first, pre-loading metadata total
QRELS = 2_088_306  # ir_datasets etc/metadata.json, trec-fair/2022/train qrels count
QUERIES = 50
FOLDER = Path("trec-fair") / "2022"
CORPUS, META, TOPICS = (
    "trec_corpus_20220301_plain.json.gz",
    "trec_2022_articles_discrete.json.gz",
    "trec_2022_train_reldocs.jsonl",
)
REGIONS = ["Western Europe", "Northern America", "Eastern Asia", "Southern Asia",
           "Northern Europe", "South America", "Western Africa", "Melanesia"]  # fmt: skip
COUNTRIES = ["United States", "United Kingdom", "France", "India", "Japan", "Brazil",
             "Nigeria", "Germany", "Australia", "Canada"]  # fmt: skip
OCCUPATIONS = ["politician", "association football player", "actor", "writer", "painter",
               "singer", "journalist", "lawyer", "university teacher", "officer"]  # fmt: skip
CATEGORIES = {
    "first_letter_category": ["a-d", "e-k", "l-r", "s-z", "other"],
    "creation_date_category": ["2001-2006", "2007-2011", "2012-2016", "2017-2022"],
    "years_category": ["Unknown", "Pre-1900", "1900-1999", "2000-Present"],
    "relative_pageviews_category": ["Low", "Medium-Low", "Medium-High", "High"],
    "num_sitelinks_category": ["English only", "2-4 languages", "5-9 languages",
                               "10+ languages"],
}  # fmt: skip
QUALITY = ["Stub", "Start", "C", "B", "GA", "FA"]


@dataclass(frozen=True)
class FairGenConfig:
    scale: float = 1.0
    text_median: float = 1500.0
    text_sigma: float = 1.25
    text_min: int = 40
    text_max: int = 300_000
    paragraphs: int = 20_000
    chunk: int = 20_000
    compresslevel: int = 1
    seed: int = 2022

    def count(self, full: int) -> int:
        return max(1, round(full * self.scale))


def paragraph_pool(cfg: FairGenConfig) -> list[str]:
    """JSON-escaped paragraphs of 30–150 Zipf words (some with gender words, some non-ASCII)."""
    rng = np.random.default_rng([cfg.seed, 1])
    model = text_model(GenConfig(passages=2, triples=1, vocab_size=200_000, seed=cfg.seed))
    lengths = rng.integers(30, 151, cfg.paragraphs)
    texts, _ = model.draw(rng, lengths)
    pool = texts.to_list()
    for i in range(0, len(pool), 97):
        pool[i] = f"{pool[i]} — São Paulo, Zürich, 東京."
    return [json.dumps(t, ensure_ascii=False)[1:-1] for t in pool]


def _ids(cfg: FairGenConfig) -> np.ndarray:
    rng = np.random.default_rng([cfg.seed, 2])
    return np.cumsum(rng.integers(1, 21, cfg.count(ARTICLES)))


def write_corpus(cfg: FairGenConfig, ids: np.ndarray, path: Path) -> dict[str, Any]:
    rng = np.random.default_rng([cfg.seed, 3])
    pool = paragraph_pool(cfg)
    mean_par = sum(len(p) for p in pool) / len(pool)
    raw = 0
    with gzip.open(f"{path}.tmp", "wb", compresslevel=cfg.compresslevel) as out:
        for start in range(0, ids.size, cfg.chunk):
            chunk = ids[start : start + cfg.chunk]
            sizes = np.clip(
                rng.lognormal(math.log(cfg.text_median), cfg.text_sigma, chunk.size),
                cfg.text_min, cfg.text_max,
            )  # fmt: skip
            n_par = np.maximum(1, np.round(sizes / mean_par)).astype(np.int64)
            picks = rng.integers(0, len(pool), int(n_par.sum())).tolist()
            lines, at = [], 0
            for doc_id, n in zip(chunk.tolist(), n_par.tolist(), strict=True):
                title = " ".join(pool[picks[at]].split(" ", 3)[:3])
                plain = "\\n".join(pool[p] for p in picks[at : at + n])
                at += n
                lines.append(
                    f'{{"id": {doc_id}, "title": "{title}", "url": '
                    f'"https://en.wikipedia.org/wiki?curid={doc_id}", "plain": "{plain}"}}\n'
                )
            data = "".join(lines).encode()
            raw += len(data)
            out.write(data)
            if (start // cfg.chunk) % 25 == 0:
                log.info("articles: %d / %d", start + chunk.size, ids.size)
    Path(f"{path}.tmp").replace(path)
    return {"articles": int(ids.size), "corpus_bytes": raw, "corpus_gz_bytes": path.stat().st_size}


def metadata_record(rng: random.Random, page_id: int) -> dict[str, Any]:
    """One record of the metadata file, shaped like the track's (most pages: no people)."""
    person = rng.random() < 0.25
    regions = rng.choices(REGIONS, k=rng.randint(0, 2))
    gender = (["male"] if rng.random() < 0.8 else ["female"]) if person else []
    record: dict[str, Any] = {
        "page_id": page_id,
        "pred_qual": round(rng.random(), 6),
        "qual_cat": rng.choice(QUALITY),
        "page_countries": rng.choices(COUNTRIES, k=len(regions)),
        "page_subcont_regions": regions,
        "source_countries": {c: rng.randint(1, 30) for c in rng.choices(COUNTRIES, k=2)},
        "source_subcont_regions": {r: rng.randint(1, 30) for r in rng.choices(REGIONS, k=2)},
        "gender": gender,
        "occupations": [rng.choice(OCCUPATIONS)] if person else [],
        "years": sorted(rng.randint(1800, 2021) for _ in range(rng.randint(0, 3))),
        "num_sitelinks": rng.randint(0, 120),
        "relative_pageviews": rng.random() * 1e-5,
        "first_letter": "s",
        "creation_date": f"20{rng.randint(1, 22):02d}-0{rng.randint(1, 9)}-15",
        "gender_category": gender[0].capitalize() if gender else "Unknown",
    }
    for name, values in CATEGORIES.items():
        record[name] = rng.choice(values)
    return record


def write_metadata(cfg: FairGenConfig, ids: np.ndarray, path: Path) -> dict[str, Any]:
    """A record for `scale` × 6,460,238 of the articles (spread evenly), each `page_id` with
    one of `cfg.paragraphs` drawn record bodies (fast to write; parsing costs the same)."""
    rng = random.Random(cfg.seed + 4)
    bodies = [json.dumps(metadata_record(rng, 0))[len('{"page_id": 0, ') :] for _ in range(
        cfg.paragraphs
    )]  # fmt: skip
    n = min(cfg.count(METADATA), ids.size)
    keep = ids[np.linspace(0, ids.size - 1, n).round().astype(np.int64)]
    raw = 0
    with gzip.open(f"{path}.tmp", "wb", compresslevel=cfg.compresslevel) as out:
        for start in range(0, keep.size, cfg.chunk):
            part = keep[start : start + cfg.chunk].tolist()
            picks = rng.choices(bodies, k=len(part))
            data = "".join(
                f'{{"page_id": {p}, {b}\n' for p, b in zip(part, picks, strict=True)
            ).encode()
            raw += len(data)
            out.write(data)
    Path(f"{path}.tmp").replace(path)
    return {"metadata": n, "metadata_bytes": raw, "metadata_gz_bytes": path.stat().st_size}


def write_topics(cfg: FairGenConfig, ids: np.ndarray, path: Path) -> dict[str, Any]:
    rng = np.random.default_rng([cfg.seed, 5])
    weights = 1.0 / np.arange(1, QUERIES + 1)
    sizes = np.maximum(1, np.round(weights / weights.sum() * cfg.count(QRELS))).astype(int)
    sizes = np.minimum(sizes, ids.size)
    with open(f"{path}.tmp", "w", encoding="utf-8") as out:
        for k, size in enumerate(sizes.tolist()):
            rel = np.sort(rng.choice(ids, size=size, replace=False)).tolist()
            qid = 100 + 7 * k
            topic = {"id": qid, "title": f"WikiProject {qid}", "url": f"https://w/{qid}"}
            out.write(json.dumps({**topic, "rel_docs": rel}) + "\n")
    Path(f"{path}.tmp").replace(path)
    return {"queries": QUERIES, "qrels": int(sizes.sum())}


def generate(cfg: FairGenConfig, home: str | Path) -> dict[str, Any]:
    """Write the three files into ``home/trec-fair/2022`` (kept when ``meta.json`` has the same
    settings); return ``meta.json``'s dict."""
    folder = Path(home) / FOLDER
    meta_path = Path(home) / "meta.json"
    if meta_path.is_file():
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        if meta.get("config") == asdict(cfg):
            log.info("%s: already generated with these settings; kept", home)
            return meta
    folder.mkdir(parents=True, exist_ok=True)
    meta_path.unlink(missing_ok=True)
    started = time.perf_counter()
    ids = _ids(cfg)
    meta = {"config": asdict(cfg)}
    meta |= write_topics(cfg, ids, folder / TOPICS)
    meta |= write_metadata(cfg, ids, folder / META)
    meta |= write_corpus(cfg, ids, folder / CORPUS)
    meta["seconds"] = round(time.perf_counter() - started, 1)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    log.info("generated %s in %.0f s", home, meta["seconds"])
    return meta


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="the IR_DATASETS_HOME to write")
    d = FairGenConfig()
    for name, value in asdict(d).items():
        p.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    args = vars(p.parse_args(argv))
    out = args.pop("out")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    print(json.dumps(generate(FairGenConfig(**args), out), indent=2))


if __name__ == "__main__":
    main()
