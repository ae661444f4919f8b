"""Paper-scale rehearsal of TREC Fair 2022: the extract stage on the real ir_datasets code over a
synthetic corpus in the real formats, up to the full 6.46M articles.

    python -m benchmarks.rehearsal.trec_fair --scale 0.01 0.1 1 --work /path/with/15GB/free \\
        [--docstore-at 0.01 0.1] [--max-rss-gib 10]

For each scale (a fraction of the real sizes) it writes the source once
(``<work>/trec-fair-<scale>/``, an ``IR_DATASETS_HOME``: ``trec_fair_generate``), then runs in
``<work>/run-trec-fair-<scale>/`` (params.yaml: docs/paper-scale.md's TREC Fair profile), each
in a fresh process with ``IR_DATASETS_HOME`` pointed at the source, measured for wall time,
CPU time and peak RSS (``wait4``; killed past ``--max-rss-gib``):

- ``extract``: ``python -m stages.extract`` (queries, the 2.09M qrels, a seeded sample of
  ``dataset.trec_fair_2022.docs_per_query`` relevant articles per query read from the corpus
  and metadata files, their alignments, triples);
- ``docstore`` (scales in ``--docstore-at`` only): what the stage did before, ir_datasets'
  own ``docs_store().get_many`` of the same number of articles. Its build loads every
  metadata record into one dict and writes the whole corpus into an lz4 store (deleted
  afterwards: it is as large as the corpus).

Writes ``<work>/results/trec_fair.json`` (earlier runs' other scales and stages kept, unless
``--fresh``) and ``trec_fair.md`` (the benchmarks/README.md table, with peak RSS and wall time
projected to full size from the two largest scales below it, linear in the scale) and prints
the markdown.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import shutil
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import machine
from benchmarks.rehearsal.run import ROOT, measured
from benchmarks.rehearsal.trec_fair_generate import (
    ARTICLES,
    CORPUS,
    FOLDER,
    FairGenConfig,
)

log = logging.getLogger("benchmarks.rehearsal.trec_fair")

DOCSTORE = """
import json, random, sys
import ir_datasets
dataset = ir_datasets.load("trec-fair/2022/train")
ids = sorted({q.doc_id for q in dataset.qrels_iter()})
wanted = random.Random(13).sample(ids, min(int(sys.argv[1]), len(ids)))
found = dataset.docs_store().get_many(wanted)
print(json.dumps({"wanted": len(wanted), "found": len(found)}))
"""


def profile(docs_per_query: int) -> dict[str, Any]:
    """The repository's params.yaml with docs/paper-scale.md's TREC Fair 2022 profile."""
    raw: dict[str, Any] = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["dataset"]["name"] = "trec-fair-2022"
    raw["dataset"]["trec_fair_2022"].update(
        docs_per_query=docs_per_query,
        dimensions=["gender_category", "page_subcont_regions"],
    )
    return raw


def run_scale(args: argparse.Namespace, scale: float) -> dict[str, Any]:
    work = args.work.resolve()
    home, folder = work / f"trec-fair-{scale:g}", work / f"run-trec-fair-{scale:g}"
    limit = args.max_rss_gib * 1024
    gen = FairGenConfig(scale=scale)
    cmd = [sys.executable, "-m", "benchmarks.rehearsal.trec_fair_generate", "--out", str(home)]
    cmd += ["--scale", str(scale)]
    meta_path = home / "meta.json"
    result: dict[str, Any] = {"scale": scale, "stages": []}
    if not (meta_path.is_file() and json.loads(meta_path.read_text())["config"] == asdict(gen)):
        log.info("scale %g: generating %s", scale, home)
        logs = work / "logs" / f"generate-{scale:g}.log"
        rc, wall, cpu, rss = measured("generate", cmd, work, logs, args.timeout, limit)
        if rc:
            raise SystemExit(f"generate failed (exit {rc}); see {work / 'logs'}")
        result["stages"].append(_row("generate", rc, wall, cpu, rss))
    result["source"] = json.loads(meta_path.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "params.yaml").write_text(yaml.safe_dump(profile(args.docs_per_query)))
    os.environ["IR_DATASETS_HOME"] = str(home)
    log.info("scale %g: extract", scale)
    cmd = [sys.executable, "-m", "stages.extract"]
    rc, wall, cpu, rss = measured("extract", cmd, folder, folder / "logs" / "extract.log",
                                  args.timeout, limit)  # fmt: skip
    result["stages"].append(_row("extract", rc, wall, cpu, rss))
    if scale in args.docstore_at:
        log.info("scale %g: ir_datasets' docstore", scale)
        n = str(args.docs_per_query * 50)
        cmd = [sys.executable, "-c", DOCSTORE, n]
        rc, wall, cpu, rss = measured("docstore", cmd, folder, folder / "logs" / "docstore.log",
                                      args.timeout, limit)  # fmt: skip
        result["stages"].append(_row("docstore", rc, wall, cpu, rss))
        store = home / FOLDER / f"{CORPUS}.pklz4"
        result["docstore_bytes"] = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
        shutil.rmtree(store, ignore_errors=True)
    return result


def _row(name: str, rc: int, wall: float, cpu: float, rss: float) -> dict[str, Any]:
    return {"name": name, "rc": rc, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss}


def project(results: list[dict[str, Any]], stage: str) -> dict[str, float] | None:
    """Wall time and peak RSS at scale 1, linear through the two largest measured scales < 1."""
    points = sorted(
        (r["scale"], s) for r in results for s in r["stages"]
        if s["name"] == stage and s["rc"] == 0 and r["scale"] < 1
    )  # fmt: skip
    if len(points) < 2:
        return None
    (x0, a), (x1, b) = points[-2:]

    def at_one(key: str) -> float:
        slope = (b[key] - a[key]) / (x1 - x0)
        return float(b[key] + slope * (1 - x1))

    return {"wall_s": at_one("wall_s"), "peak_rss_mib": at_one("peak_rss_mib")}


def markdown(results: list[dict[str, Any]], info: dict[str, Any]) -> str:
    m = info["machine"]
    lines = [
        f"Date {info['date']}; machine: {m['cpu']}, {m['cores']} cores, {m['mem_gib']} GiB RAM.",
        "",
        "| scale | articles | corpus (raw / gzip) | stage | wall | CPU | peak RSS |",
        "|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in results:
        src = r["source"]
        size = f"{src['corpus_bytes'] / 1e9:.2f} / {src['corpus_gz_bytes'] / 1e9:.2f} GB"
        for s in r["stages"]:
            state = "" if s["rc"] == 0 else f" (failed, exit {s['rc']})"
            lines.append(
                f"| {r['scale']:g} | {src['articles']:,} | {size} | {s['name']}{state} | "
                f"{s['wall_s']:.1f} s | {s['cpu_s']:.1f} s | {s['peak_rss_mib']:,.0f} MiB |"
            )
    for stage in ("extract", "docstore"):
        p = project(results, stage)
        if p:
            lines.append(
                f"| 1 (projected) | {ARTICLES:,} | | {stage} | {p['wall_s']:.0f} s | | "
                f"{p['peak_rss_mib']:,.0f} MiB |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--scale", type=float, nargs="+", default=[0.01, 0.1, 1.0])
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--docstore-at", type=float, nargs="*", default=[0.01, 0.1])
    p.add_argument("--docs-per-query", type=int, default=100)
    p.add_argument("--max-rss-gib", type=float, default=10.0)
    p.add_argument("--timeout", type=float, default=4 * 3600)
    p.add_argument("--fresh", action="store_true", help="forget earlier results in --work")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    out = args.work.resolve() / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "trec_fair.json"
    kept = json.loads(path.read_text())["results"] if path.is_file() and not args.fresh else []
    info = {"date": dt.date.today().isoformat(), "machine": machine()}
    for scale in sorted(args.scale):
        kept = merge(kept, run_scale(args, scale))
        path.write_text(json.dumps({**info, "results": kept}, indent=2))
    text = markdown(kept, info)
    (out / "trec_fair.md").write_text(text)
    print(text)


def merge(kept: list[dict[str, Any]], new: dict[str, Any]) -> list[dict[str, Any]]:
    """`kept` with `new`'s stages replacing those of the same scale and name."""
    old = next((r for r in kept if r["scale"] == new["scale"]), None)
    if old is not None:
        names = {s["name"] for s in new["stages"]}
        new["stages"] = [s for s in old["stages"] if s["name"] not in names] + new["stages"]
        new = {**old, **new}
    return sorted([r for r in kept if r["scale"] != new["scale"]] + [new], key=lambda r: r["scale"])


if __name__ == "__main__":
    main()
