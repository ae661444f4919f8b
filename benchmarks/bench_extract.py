"""Extraction of MS MARCO triples: streamed to Parquet (ours) vs collected then written.

Each side runs in a fresh interpreter over the same fake ``msmarco-passage/train/triples-small``
(real ``GenericDocPair`` rows made on the fly, as ir_datasets streams them): ours is
``pipeline.data.msmarco.write_triples`` (50k-row Arrow batches into a ParquetWriter, atomic
rename); naive collects every triple in a Python list, builds one DataFrame and writes it.
Reported: wall time and the process's peak RSS (VmHWM, after imports reset it) of each.

    python -m benchmarks.bench_extract [--triples 3000000] [--repeats 3]
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import parser, report, setup_logging, write_row

log = logging.getLogger("benchmarks.extract")
ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import json, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
import polars as pl
from pipeline.data.msmarco import MsmarcoConfig, TRIPLES_ID, write_triples
from tests.unit.irds_fakes import FakeDataset, loader, pairs

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) / 1024
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM: only the extraction's peak counts
except OSError:
    pass
n, out = {n}, Path({out!r})
start = time.perf_counter()
if {naive}:
    rows = [(p.query_id, p.doc_id_a, p.doc_id_b) for p in pairs(n)()]
    frame = pl.DataFrame(rows, schema=["query_id", "pos_doc_id", "neg_doc_id"], orient="row")
    frame.write_parquet(out)
    written = frame.height
else:
    data = {{TRIPLES_ID: FakeDataset(pairs=pairs(n), pairs_count=n)}}
    written = write_triples(loader(data), MsmarcoConfig(n_triples=n, batch_size=50_000), out)
seconds = time.perf_counter() - start
print(json.dumps({{"rows": written, "seconds": seconds, "peak_rss_mib": status("VmHWM:")}}))
"""


def one(n: int, naive: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        script = SCRIPT.format(root=str(ROOT), n=n, out=f"{tmp}/t.parquet", naive=naive)
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=False
        )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["rows"] != n:
        raise AssertionError(f"wrote {result['rows']} of {n} triples")
    return result


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--triples", type=int, default=3_000_000)
    args = p.parse_args()
    setup_logging()
    ours, naive = [], []
    for _ in range(args.repeats):  # one interpreter at a time: they do not share memory
        ours.append(one(args.triples, naive=False))
        naive.append(one(args.triples, naive=True))
    row = report("extract", "s", [r["seconds"] for r in ours], [r["seconds"] for r in naive],
                 higher=False)  # fmt: skip
    rss_ours = sorted(r["peak_rss_mib"] for r in ours)[len(ours) // 2]
    rss_naive = sorted(r["peak_rss_mib"] for r in naive)[len(naive) // 2]
    log.info("extract peak RSS: ours %.0f MiB, naive %.0f MiB", rss_ours, rss_naive)
    row |= {
        "triples": args.triples,
        "ours_peak_rss_mib": rss_ours,
        "naive_peak_rss_mib": rss_naive,
        "memory_ratio": rss_naive / rss_ours,
        "runs": {"ours": ours, "naive": naive},
    }
    write_row("extract", row, args.out)


if __name__ == "__main__":
    main()
