"""Miniature ir_datasets caches in the real file formats, read by the real `ir_datasets.load`.

ir_datasets (0.6.3) resolves its cache folder `IR_DATASETS_HOME` when it is imported (every
dataset module computes its paths in `_init()`), so `tests/conftest.py` points
`IR_DATASETS_HOME` at a session folder before anything imports it, and the fixtures write these
files there. A file present at its cache path is used as it is: the md5 in ir_datasets'
`etc/downloads.json` is checked only while downloading (`util/download.py`, `Download.path`).

`msmarco-passage/` (`datasets/msmarco_passage.py`):
- `collectionandqueries.tar.gz` (download `collectionandqueries`): member `collection.tsv`
  (`pid \\t text`), which ir_datasets repairs with `FixEncoding` (latin-1 mojibake such as
  `cafÃ©` becomes `café`) into the cached `collection.tsv` on first use; members
  `queries.dev.small.tsv` and `qrels.dev.small.tsv` (`msmarco-passage/dev/small`);
- `irds_version.txt` = `v2`: the collection's `Migrator` deletes a cached `collection.tsv`
  (and its docstore) when the marker is missing or older, then writes it;
- `queries.tar.gz` (download `queries`): `queries.train.tsv` and `queries.dev.tsv`, extracted
  into `train/queries.tsv` and `dev/queries.tsv` (the queries of `train/triples-small` and
  `dev`);
- `train/small.triples.qidpid.tsv`: `qid \\t pos_pid \\t neg_pid`, the file ir_datasets derives
  from `triples.train.small.tar.gz` (that download has no cache path: only the derived file
  can be placed). `docpairs_count()` is the metadata's 39,780,811, not this file's count;
- `dev/qrels` (download `dev/qrels`): `qid \\t 0 \\t pid \\t 1`.

`trec-fair/2022/` (`datasets/trec_fair.py`, `JsonlDocs`, mapping `mapping2022`):
- `trec_corpus_20220301_plain.json.gz`: one JSON object a line, `id` (int), `title`, `url`,
  `plain` (ir_datasets' `text`);
- `trec_2022_articles_discrete.json.gz`: one object a line, `page_id` + the metadata fields of
  `FairTrec2022Doc` (lists, dicts, categories; a missing field is `None`);
- `trec_2022_train_reldocs.jsonl` (not compressed): `id`, `title`, `url`, `rel_docs` (ids).
"""

from __future__ import annotations

import gzip
import io
import json
import random
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import io as pio
from pipeline.data.msmarco import SHIPPED_RUNS, load_query_set


def _words(text: str) -> list[str]:
    return text.split()


MALE = ["he", "his", "him", "man", "father", "king", "brother", "husband"]
FEMALE = ["she", "her", "woman", "mother", "queen", "sister", "wife", "daughter"]
WORDS = _words(
    "the of and a in is for that on with was are by this from at an which have not can also "
    "salary nurse engineer career work garden city river music history science doctor teacher "
    "company market water energy school family house car price law game film book health"
)
NON_ASCII = "naïve café résumé Zürich Ελλάδα 東京 São Paulo"
MOJIBAKE = "café".encode().decode("latin-1")  # 'cafÃ©': what FixEncoding repairs


@dataclass(frozen=True)
class Msmarco:
    """What `write_msmarco` planted, for the tests' expectations."""

    train_queries: dict[str, str]
    triples: list[tuple[str, str, str]]
    passages: dict[str, str]  # as ir_datasets should return them (encoding repaired)
    dev_qrels: list[tuple[str, str, int]]  # (qid, pid, relevance), file order
    relevant: dict[str, str]  # 215/1,765 query → its relevant passage
    dev_small_queries: dict[str, str]
    dev_small_qrels: list[tuple[str, str, int]]
    mojibake_pid: str
    non_ascii_pid: str


def _text(rng: random.Random, n: int) -> str:
    words = rng.choices(WORDS, k=n)
    for _ in range(rng.randint(0, 3)):  # gender words, unevenly: Ψ varies across passages
        words[rng.randrange(n)] = rng.choice(MALE if rng.random() < 0.6 else FEMALE)
    return " ".join(words)


def _tar_gz(path: Path, members: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _tsv(rows: list[tuple[Any, ...]]) -> str:
    return "".join("\t".join(str(c) for c in row) + "\n" for row in rows)


def write_msmarco(home: Path, n_train_queries: int = 40, n_triples: int = 120) -> Msmarco:
    """The msmarco-passage files (see the module docstring) under `home/msmarco-passage`.

    Passages: every passage of the shipped BM25 top-200 run of the 215 set (so the shipped
    EDBT 2022 runs, reranked from it, find every text), one planted relevant passage per query
    of the 1,765 set outside the 215 (its query's words first, so BM25 finds it), the
    triples' passages, a mojibake passage and a non-ASCII one. Training query ids are outside
    the dev sets, as in MS MARCO. Dev qrels: each 215 query's
    passage at BM25 rank 1 + (i mod 12), each other 1,765 query's planted passage, a
    duplicate line and a query outside both sets.
    """
    rng = random.Random(22)
    root = home / "msmarco-passage"
    q215 = load_query_set("215")
    q1765 = load_query_set("1765")
    bm25 = pio.read_trec_run(SHIPPED_RUNS["215"]).sort("query_id", "rank")
    passages: dict[str, str] = {d: _text(rng, rng.randint(8, 30)) for d in bm25["doc_id"]}
    relevant: dict[str, str] = {}
    ranked = dict(bm25.group_by("query_id", maintain_order=True).agg("doc_id").iter_rows())
    for i, qid in enumerate(q215["query_id"]):
        relevant[qid] = ranked[qid][i % 12]
    in215 = set(q215["query_id"])
    for i, (qid, text) in enumerate(q1765.iter_rows()):
        if qid not in in215:
            pid = str(9_000_000 + i)
            passages[pid] = f"{text} {_text(rng, 12)}"
            relevant[qid] = pid
    train = {str(2_000_000 + i): f"train question {i} {rng.choice(WORDS)}" for i in range(40)}
    train = dict(list(train.items())[:n_train_queries])
    train[next(iter(train))] = f"what is a {NON_ASCII.split()[1]}"  # non-ASCII query text
    pool = sorted(passages)
    triples = []
    for i in range(n_triples):
        qid = list(train)[i % len(train)]
        triples.append((qid, str(8_000_000 + i), rng.choice(pool)))
        passages[str(8_000_000 + i)] = f"{train[qid]} {_text(rng, 15)}"
    mojibake_pid, non_ascii_pid = "8900000", "8900001"
    passages[non_ascii_pid] = f"{NON_ASCII} {_text(rng, 6)}"
    raw = dict(passages)
    raw[mojibake_pid] = f"the {MOJIBAKE} on the river"
    passages[mojibake_pid] = "the café on the river"
    triples[0] = (triples[0][0], triples[0][1], mojibake_pid)
    triples[1] = (triples[1][0], triples[1][1], non_ascii_pid)
    dev_qrels = [(q, d, 1) for q, d in relevant.items()]
    first = next(iter(relevant))
    dev_qrels += [(first, relevant[first], 1), ("1048585", "7187158", 1)]  # duplicate; outside
    small_q = {"1048585": "what is paula deen's brother", "2": "Androgen receptor define"}
    small_qrels = [("1048585", "7187158", 1), ("2", "7187160", 1)]
    collection = sorted(raw.items(), key=lambda kv: int(kv[0]))
    _tar_gz(
        root / "collectionandqueries.tar.gz",
        {
            "collection.tsv": _tsv(collection),
            "queries.dev.small.tsv": _tsv(list(small_q.items())),
            "qrels.dev.small.tsv": _tsv([(q, 0, d, r) for q, d, r in small_qrels]),
        },
    )
    (root / "irds_version.txt").write_text("v2")
    dev_queries = list(q1765.iter_rows()) + list(small_q.items())
    _tar_gz(
        root / "queries.tar.gz",
        {"queries.train.tsv": _tsv(list(train.items())), "queries.dev.tsv": _tsv(dev_queries)},
    )
    (root / "train").mkdir(parents=True, exist_ok=True)
    (root / "train" / "small.triples.qidpid.tsv").write_text(_tsv(triples))
    (root / "dev").mkdir(parents=True, exist_ok=True)
    (root / "dev" / "qrels").write_text(_tsv([(q, 0, d, r) for q, d, r in dev_qrels]))
    return Msmarco(
        train, triples, passages, dev_qrels, relevant, small_q, small_qrels,
        mojibake_pid, non_ascii_pid,
    )  # fmt: skip


# ---------------------------------------------------------------------------- TREC Fair 2022

REGIONS = ["Western Europe", "Northern America", "Eastern Asia", "Southern Asia", "Melanesia"]
GENDERS = [["male"], ["female"], ["cisgender female"], ["transgender male"], [], None]
CATEGORIES = {
    "first_letter_category": ["a-d", "e-k", "l-r", "s-z"],
    "creation_date_category": ["2001-2006", "2007-2011", "2012-2016", "2017-2022"],
    "years_category": ["Pre-1900", "1900-1999", "2000-Present", "Unknown"],
    "relative_pageviews_category": ["Low", "Medium-Low", "Medium-High", "High"],
    "num_sitelinks_category": ["English only", "2-4 languages", "5-9 languages", "10+ languages"],
}
QUALITY = ["Stub", "Start", "C", "B", "GA", "FA"]
THEMES = ["agriculture", "astronomy", "biography", "cycling", "dinosaurs", "economics"]
# Articles 1-6: (gender_category, page_subcont_regions) of each kind a field can hold
SPECIAL = {
    "1": ("Female", ["Western Europe"]),
    "2": ("Male", ["Western Europe", "Eastern Asia"]),
    "3": (None, []),
    "4": ("Male", None),
    "5": ("Female", ["Eastern Asia"]),
    "6": ("Unknown", ["Eastern Asia", "Eastern Asia"]),
}


@dataclass(frozen=True)
class TrecFair:
    """What `write_trec_fair` planted."""

    articles: dict[str, dict[str, Any]]  # doc id → corpus record (`id`, `title`, `url`, `plain`)
    metadata: dict[str, dict[str, Any]]  # doc id → metadata record (`page_id`, fields)
    topics: list[dict[str, Any]]  # `id`, `title`, `url`, `rel_docs`
    no_metadata: str  # an article without a metadata record


def _gender_category(gender: list[str] | None) -> str:
    if not gender:
        return "Unknown"
    return "Female" if "female" in gender[0] else "Male"


def metadata_record(rng: random.Random, page_id: int) -> dict[str, Any]:
    """A metadata line of `trec_2022_articles_discrete.json.gz` (field names of
    `FairTrec2022Doc`; lists, dicts and categories as the track's file holds them)."""
    gender = rng.choice(GENDERS)
    regions = rng.sample(REGIONS, rng.randint(0, 2))
    sources = {r: rng.randint(1, 5) for r in rng.sample(REGIONS, rng.randint(0, 2))}
    if rng.random() < 0.3:
        sources["UNK"] = rng.randint(1, 3)
    record: dict[str, Any] = {
        "page_id": page_id,
        "pred_qual": round(rng.random(), 4),
        "qual_cat": rng.choice(QUALITY),
        "page_countries": ["France"] if "Western Europe" in regions else [],
        "page_subcont_regions": regions,
        "source_countries": {"France": 2} if sources else {},
        "source_subcont_regions": sources,
        "gender": gender,
        "occupations": rng.sample(["politician", "painter", "athlete"], rng.randint(0, 2)),
        "years": [rng.randint(1800, 2020)] if rng.random() < 0.5 else [],
        "num_sitelinks": rng.randint(0, 80),
        "relative_pageviews": rng.random() / 1000,
        "first_letter": "a",
        "creation_date": f"20{rng.randint(1, 22):02d}-01-15",
        "gender_category": _gender_category(gender),
    }
    for name, values in CATEGORIES.items():
        record[name] = rng.choice(values)
    return record


def write_trec_fair(home: Path, n_articles: int = 400, n_queries: int = 6) -> TrecFair:
    """The trec-fair/2022 files (see the module docstring) under `home/trec-fair/2022`.

    Articles 1..n (ids as ints, in file order); every article but one has a metadata record
    (the metadata file lists them in a different order); each query has relevant articles
    overlapping with the next query's, some query ids have two digits (numeric order ≠
    string order), one article text is non-ASCII, and articles 1-6 have the
    `gender_category` / `page_subcont_regions` values of `SPECIAL` (string, list, empty,
    missing, repeated).
    """
    rng = random.Random(2022)
    root = home / "trec-fair" / "2022"
    root.mkdir(parents=True, exist_ok=True)
    articles: dict[str, dict[str, Any]] = {}
    for i in range(1, n_articles + 1):
        articles[str(i)] = {
            "id": i,
            "title": f"Article {i}",
            "url": f"https://en.wikipedia.org/wiki/Article_{i}",
            "plain": f"Article {i} is about {_text(rng, rng.randint(20, 60))}.",
        }
    articles["7"]["plain"] = f"{NON_ASCII} {articles['7']['plain']}"
    no_metadata = str(n_articles // 2)
    metadata = {d: metadata_record(rng, int(d)) for d in articles if d != no_metadata}
    for d, (gender, regions) in SPECIAL.items():
        metadata[d].update(gender_category=gender, page_subcont_regions=regions)
    order = list(metadata)
    rng.shuffle(order)
    with gzip.open(root / "trec_2022_articles_discrete.json.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(metadata[d]) + "\n" for d in order)
    topics = []
    per = n_articles // (n_queries + 1)
    for k, qid in enumerate([1, 2, 3, 10, 11, 25][:n_queries]):
        rel = list(range(1 + k * per, 1 + (k + 2) * per))  # overlaps the next query's
        theme = THEMES[k]
        for number in rel:  # the project's name is in its articles: BM25 finds them
            articles[str(number)]["plain"] += f" {theme} {theme}"
        topics.append(
            {"id": qid, "title": f"WikiProject {theme.capitalize()}", "url": f"https://w/{qid}",
             "rel_docs": rel}
        )  # fmt: skip
    with gzip.open(root / "trec_corpus_20220301_plain.json.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(a) + "\n" for a in articles.values())
    with open(root / "trec_2022_train_reldocs.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(t) + "\n" for t in topics)
    return TrecFair(articles, metadata, topics, no_metadata)
