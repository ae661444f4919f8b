"""The TREC Fair 2022 articles a stage needs, read from ir_datasets' files without its docstore.

ir_datasets 0.6.3 serves `trec-fair/2022` documents (`JsonlDocs`) only through a docstore that
it builds on first use: it loads all 6,460,238 records of `trec_2022_articles_discrete.json.gz`
into one dict (≈ 3.9 KB each in memory, a projected 24 GiB), then writes every article of
`trec_corpus_20220301_plain.json.gz` into an lz4 store (another copy of the corpus on disk).
The extract stage needs a few thousand articles (`dataset.trec_fair_2022.docs_per_query` per
query), so `read_articles` streams both files once and keeps only the wanted ids: memory is
bounded by the wanted records (the whole extract: 1.1 GiB and 11 min at full size on the
rehearsal's synthetic corpus, benchmarks/README.md, "TREC Fair 2022 rehearsal").

The files are ir_datasets' own (its `Download` objects: a missing file is downloaded and
md5-checked by ir_datasets, a present one is read as it is) and each article is built exactly
as `JsonlDocs._docs_iter_first` builds it: the corpus record updated with its metadata record
(joined on `id` = `page_id`), then every `FairTrec2022Doc` field read through ir_datasets'
field map, converted by the field's type unless that type is a `typing` one. A test compares
the result with `docs_store().get_many` on the same files.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pipeline.errors import SetupError
from pipeline.progress import progress

log = logging.getLogger(__name__)

HANDLER_ATTRS = ("_dlc", "_metadata_dlc", "_field_map", "_doc_type")
HEAD = 128  # bytes of a line searched first for its id


def _handler(dataset: Any) -> Any:
    handler = dataset.docs_handler()
    lacking = [a for a in HANDLER_ATTRS if not hasattr(handler, a)]
    if lacking:
        import ir_datasets

        raise SetupError(
            f"trec-fair: ir_datasets {ir_datasets.__version__}'s docs handler "
            f"{type(handler).__name__} lacks {lacking}; expected ir_datasets 0.6's JsonlDocs "
            "(corpus and metadata files). Fix: pip install 'ir_datasets==0.6.3'"
        )
    return handler


def _id_pattern(key: str) -> re.Pattern[bytes]:
    """The value of the JSON key `key` (an int, or digits in a string) anywhere in a line."""
    return re.compile(b'"' + re.escape(key.encode()) + rb'"\s*:\s*"?(\d+)')


def _records(path: Path, key: str, wanted: set[str], desc: str) -> Iterator[dict[str, Any]]:
    """The JSON records of the gzipped JSON-lines file `path` whose `key` is in `wanted`.

    A line is parsed only when its first `"key": <digits>` is wanted (looked for in the
    line's first `HEAD` bytes, where the files put it, then in the whole line). The first
    match is the key itself: a `"` inside a JSON string is escaped, and these records nest
    no object with such a key before it; the parsed record's own `key` decides."""
    pattern = _id_pattern(key)
    want = {w.encode() for w in wanted}
    size = path.stat().st_size
    bar = progress(total=size, desc=desc, unit="B", unit_scale=True, mininterval=5.0)
    with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as lines:
        for n, line in enumerate(lines):
            if not n % 65_536:
                bar.update(raw.tell() - bar.n)
            found = pattern.search(line, 0, HEAD)
            if found is None or found.end() == HEAD:  # not in the head, or cut at its end
                found = pattern.search(line)
            if found is not None and found.group(1) in want:
                record = json.loads(line)
                if str(record.get(key)) in wanted:
                    yield record
    bar.update(size - bar.n)
    bar.close()


def _convert(doc_type: Any, field: str, value: Any) -> Any:
    """ir_datasets' conversion: the field's type applied, unless it is a `typing` type."""
    kind = doc_type.__annotations__[field]
    return value if "typing" in str(kind) else kind(value)


def read_articles(dataset: Any, doc_ids: Sequence[str]) -> Iterator[Any]:
    """The articles `doc_ids` of an ir_datasets `trec-fair/2022*` dataset as its
    `FairTrec2022Doc`s, in corpus-file order (see the module docstring); ids not in the
    corpus are logged (count and first few) and skipped."""
    handler = _handler(dataset)
    wanted = set(doc_ids)
    meta_path = Path(handler._metadata_dlc.path())
    metadata = {
        str(r["page_id"]): r for r in _records(meta_path, "page_id", wanted, "trec-fair metadata")
    }
    doc_type, fields = handler._doc_type, handler._field_map
    found: set[str] = set()
    corpus_path = Path(handler._dlc.path())
    for record in _records(corpus_path, "id", wanted, "trec-fair corpus"):
        doc_id = str(record["id"])
        if doc_id in found:
            continue
        found.add(doc_id)
        record.update(metadata.get(doc_id, {}))
        yield doc_type(**{f: _convert(doc_type, f, record.get(src)) for f, src in fields.items()})
    missing = sorted(wanted - found)
    if missing:
        log.warning("trec-fair: %d ids not in the corpus, first %s", len(missing), missing[:5])
    log.info(
        "trec-fair: %d of %d articles read (%d with metadata)",
        len(found), len(wanted), len(found & metadata.keys()),
    )  # fmt: skip
