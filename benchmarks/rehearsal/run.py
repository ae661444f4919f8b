"""Paper-scale rehearsal: the paper profile's stages on a synthetic MS MARCO at full size.

    python -m benchmarks.rehearsal.run --passages 1000000 4000000 8841823 \\
        --triples 3000000 --work /path/with/12GB/free

For each collection size it generates the source once (``<work>/source-<N>-<T>``, kept for
later runs), writes the paper profile's ``params.yaml`` into ``<work>/run-<N>-<T>`` (query set
1,765, BM25 top-1000 over the whole collection, ``score.tokenizer: reference``,
MS MARCO's one split, cross-encoder, batch 16, ``max_len`` 256, ``length_window`` 64) and runs
there, each in a fresh process measured for wall time, CPU time and peak RSS (``wait4``):

- ``generate``: the source (only when not on disk yet; not a pipeline stage);
- ``extract``: 3M triples, dev qrels, bm25s over all N passages (top 1,000 for 1,765
  queries), the corpus of every passage the later stages need;
- ``score``: Ψ/ζ/lexicon shares of that corpus, query complexity;
- ``candidates``: the test candidates (the extract stage's BM25 run) and the BM25 training
  candidates (read by LWS) over the extracted corpus: all training queries (the default), or
  a seeded sample of ``--train-cand-queries`` of them, with the full figure projected
  (linear in the number of queries: each query reads its terms' postings);
- ``order@<m>`` for ``--orders`` (shuffle, curriculum, LWS);
- ``evaluate@bm25``: every metric family on the 1,765 × 1,000 BM25 run with its scores;
  ``evaluate@bm25+groups``: the same plus AWRF and the counterfactual gap (F/M/N groups
  derived from Ψ; MS MARCO has none: timing only);
- ``train+rerank@<model>`` (``benchmarks.rehearsal.model_bench``, largest size only unless
  ``--models-at all``): the train stage's set-up on all the triples, then ``--train-steps``
  optimiser steps and a rerank of ``--rerank-queries`` × 1,000 candidates (throughput,
  FLOPs per token, token-cache memory, CPU and GPU projections).

A stage that runs past ``--stage-timeout`` or ``--max-rss-gib`` is killed and recorded as
failed; the sizes run in ascending order, so the smaller sizes' figures exist first.

Then process start-up of each stage module now and at commit ``--before`` (a temporary git
worktree, removed afterwards), and this CPU's fp32 matmul throughput. Writes
``<work>/results/rehearsal.json`` and ``rehearsal.md`` (the tables of benchmarks/README.md)
and prints the markdown.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import yaml

import stages
from benchmarks.common import machine
from benchmarks.rehearsal.generate import FULL_PASSAGES, FULL_TRIPLES, GenConfig

log = logging.getLogger("benchmarks.rehearsal")
ROOT = Path(__file__).resolve().parents[2]
BEFORE = "43221ef"
LOCAL = "<a local folder: not recorded>"
LIGHT_STAGES, MODEL_STAGES = stages.LIGHT, stages.MODEL
ORDER_METHODS = {"shuffle": "baseline", "curriculum": "curriculum_low_high", "lws": "lws"}


@dataclass
class StageResult:
    """One stage run: wall and CPU seconds, peak RSS, its outputs (bytes, Parquet rows)."""

    name: str
    rc: int
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    outputs: dict[str, dict[str, int]] = field(default_factory=dict)
    phases: dict[str, Any] = field(default_factory=dict)
    projected: dict[str, float] = field(default_factory=dict)

    @property
    def output_bytes(self) -> int:
        return sum(o["bytes"] for o in self.outputs.values())


# -- running one measured process ---------------------------------------------------------


def rss_mib(pid: int) -> float:
    """Current resident set size of process ``pid`` (MiB; 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def watchdog(proc: subprocess.Popen[bytes], limit_mib: float, tripped: list[float]) -> None:
    """Kill ``proc`` once its RSS exceeds ``limit_mib`` (a clean record instead of the
    kernel's OOM killer picking a process on a machine without swap)."""
    while proc.returncode is None:
        rss = rss_mib(proc.pid)
        if rss > limit_mib:
            tripped.append(rss)
            proc.kill()
            return
        time.sleep(0.5)


def measured(
    name: str, cmd: list[str], cwd: Path, log_path: Path, timeout: float, limit_mib: float
) -> tuple[int, float, float, float]:
    """Run ``cmd``; ``(exit code, wall s, CPU s, peak RSS MiB)`` of that process alone.
    Killed (exit code −9) past ``timeout`` seconds or ``limit_mib`` MiB resident."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("PIPELINE_LOG", "INFO")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        tripped: list[float] = []
        guard = threading.Thread(target=watchdog, args=(proc, limit_mib, tripped), daemon=True)
        guard.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    rc = proc.returncode
    if tripped:
        log.error("%s: killed at %.0f MiB resident (limit %.0f MiB)", name, tripped[0], limit_mib)
    elif wall >= timeout:
        log.error("%s: killed after %.0f s (--stage-timeout)", name, wall)
    if rc != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-15:]
        log.error("%s failed (exit %d); last lines of %s:\n%s", name, rc, log_path, "\n".join(tail))
    return rc, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """``relative path → (size, mtime_ns)`` of every file under ``folder`` (logs excluded)."""
    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and "logs" not in p.parts and "rehearsal_phases" not in p.parts:
            st = p.stat()
            out[str(p.relative_to(folder))] = (st.st_size, st.st_mtime_ns)
    return out


def outputs(before: dict[str, tuple[int, int]], folder: Path) -> dict[str, dict[str, int]]:
    """Files new or rewritten since ``before``: bytes, and rows for Parquet files."""
    found: dict[str, dict[str, int]] = {}
    for path, stat in snapshot(folder).items():
        if before.get(path) == stat:
            continue
        entry = {"bytes": stat[0]}
        if path.endswith(".parquet"):
            entry["rows"] = int(pq.ParquetFile(folder / path).metadata.num_rows)
        found[path] = entry
    return found


# -- the paper profile --------------------------------------------------------------------


def paper_params(args: argparse.Namespace) -> dict[str, Any]:
    """The repository's params.yaml with the paper profile of docs/paper-scale.md (query set
    1,765, top-1,000 candidates; word lists as absolute paths: stages run elsewhere)."""
    raw: dict[str, Any] = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["dataset"]["name"] = "msmarco-passage"
    raw["dataset"]["msmarco_passage"].update(
        n_triples=args.triples,
        query_set=args.query_set,
        candidates="auto",
        candidates_k=args.top_k,  # the extract stage's BM25 depth (else 200)
        batch_size=100_000,
    )
    for key in ("wordlist_specific", "wordlist_representative"):
        raw["score"][key] = str(ROOT / raw["score"][key])
    raw["score"]["tokenizer"] = "reference"
    raw["candidates"]["top_k"] = args.top_k
    raw["candidates"]["train_top_k"] = args.train_top_k  # docs/paper-scale.md: LWS reads them
    raw["model"].update(
        arch="cross_encoder", train_layers=None, max_len=256, q_len=32, name="all-MiniLM-L6-v2"
    )
    raw["train"].update(
        group_size=2,
        batch_size=16,
        lr=3e-6,
        epochs=1,
        warmup_steps=160_000,
        length_window=64,
        threads=args.threads,
        device="cpu",
    )
    return raw


def stage_commands(
    args: argparse.Namespace, source: Path, models: bool = True
) -> list[tuple[str, list[str]]]:
    py, stage = sys.executable, ["-m", "benchmarks.rehearsal.stage", "--source", str(source)]
    cands = [*stage]
    if args.train_cand_queries:
        cands += ["--train-cand-queries", str(args.train_cand_queries)]
    cmds: list[tuple[str, list[str]]] = [
        ("extract", [py, *stage, "stages.extract"]),
        ("score", [py, *stage, "stages.score"]),
        ("candidates", [py, *cands, "stages.candidates"]),
    ]
    for ordering in args.orders:
        method = ORDER_METHODS[ordering]
        cmds.append(
            (f"order@{method}", [py, *stage, "--name", f"order@{method}", "stages.order", method])
        )
    cmds.append(
        (
            "evaluate@bm25",
            [py, *stage, "--name", "evaluate@bm25", "stages.evaluate", "bm25", "--first-stage"],
        )
    )
    cmds.append(
        (
            "evaluate@bm25+groups",
            [py, *stage, "--name", "evaluate@bm25+groups", "--synthetic-groups",
             "stages.evaluate", "bm25-groups", "--first-stage"],
        )
    )  # fmt: skip
    for model in args.models if models else []:
        bench = ["-m", "benchmarks.rehearsal.model_bench", "train", "--model", model]
        bench += ["--steps", str(args.train_steps), "--rerank-queries", str(args.rerank_queries)]
        trained = ORDER_METHODS["lws" if "lws" in args.orders else (args.orders or ["shuffle"])[0]]
        bench += ["--threads", str(args.threads), "--order", trained]
        bench += ["--out", f"rehearsal_phases/train+rerank@{model}.json"]
        cmds.append((f"train+rerank@{model}", [py, *bench]))
    return cmds


def project_candidates(result: StageResult) -> None:
    """The candidates stage with every training query, from its sampled run: the training
    side's fixed cost (tokenise and index the corpus) once, its per-query cost (score and
    sort the whole corpus, keep the top k) times the queries; memory: the sampled rows'
    in-memory size scaled, held twice (the per-query frames and their concatenation)."""
    ph = result.phases
    total, run = ph.get("train_queries_total", 0), ph.get("train_queries_run", 0)
    if not run or total <= run:
        return
    scale = total / run
    per_query = ph["seconds"].get("fold_candidates.train.queries", 0.0) / run
    rows = ph.get("train_rows", 0) * scale
    in_memory = ph.get("train_bytes_in_memory", 0) * scale
    result.projected = {
        "train_queries": total,
        "sampled_queries": run,
        "per_query_s": per_query,
        "wall_s": result.wall_s + per_query * (total - run),
        "train_rows": rows,
        "train_rows_in_memory_bytes": in_memory,
        "peak_rss_mib_lower_bound": result.peak_rss_mib
        + 2 * (in_memory - ph.get("train_bytes_in_memory", 0)) / 2**20,
        "train_candidates_bytes": result.outputs.get("data/train_candidates.parquet", {}).get(
            "bytes", 0
        )
        * scale,
    }


def project_lws(stages: list[dict[str, Any]]) -> None:
    """order@lws with every training candidate: its time and peak RSS beyond the baseline
    ordering's grow with the candidate rows it reads (linear, from the sampled run)."""
    by = {r["name"]: r for r in stages}
    cands, lws, base = by.get("candidates"), by.get("order@lws"), by.get("order@baseline")
    if not (cands and cands["projected"] and lws and base) or lws["rc"] or base["rc"]:
        return
    sampled = cands["phases"].get("train_rows", 0)
    if not sampled:
        return
    scale = cands["projected"]["train_rows"] / sampled
    lws["projected"] = {
        "train_rows": cands["projected"]["train_rows"],
        "wall_s": base["wall_s"] + (lws["wall_s"] - base["wall_s"]) * scale,
        "peak_rss_mib": base["peak_rss_mib"] + (lws["peak_rss_mib"] - base["peak_rss_mib"]) * scale,
    }


def run_size(args: argparse.Namespace, n: int) -> dict[str, Any]:
    """Every stage at collection size ``n``; the size's results (also written as JSON)."""
    work = args.work.resolve()
    source = work / f"source-{n}-{args.triples}"
    folder = work / f"run-{n}-{args.triples}"
    results: list[StageResult] = []
    gen = GenConfig(**{**asdict(GenConfig()), **gen_overrides(args), "passages": n})
    meta_path = source / "meta.json"
    if not (meta_path.is_file() and json.loads(meta_path.read_text()).get("config") == asdict(gen)):
        cmd = [sys.executable, "-m", "benchmarks.rehearsal.generate", "--out", str(source)]
        for k, v in asdict(gen).items():
            cmd += [f"--{k.replace('_', '-')}", str(v)]
        log.info("n=%d: generating the source into %s", n, source)
        rc, wall, cpu, rss = measured(
            "generate", cmd, work, work / "logs" / f"generate-{n}.log", args.stage_timeout,
            args.max_rss_gib * 1024,
        )  # fmt: skip
        if rc:
            raise SystemExit(f"generate failed; see {work / 'logs'}")
        files = {f.name: {"bytes": f.stat().st_size} for f in source.iterdir() if f.is_file()}
        results.append(StageResult("generate", rc, wall, cpu, rss, files))
    meta = json.loads(meta_path.read_text())
    if args.fresh and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "params.yaml").write_text(yaml.safe_dump(paper_params(args), sort_keys=False))
    models = args.models_at == "all" or n == max(args.passages)
    for name, cmd in stage_commands(args, source, models):
        if args.only and name.split("@")[0] not in args.only:
            continue
        log.info("n=%d: %s", n, name)
        before = snapshot(folder)
        rc, wall, cpu, rss = measured(
            name, cmd, folder, folder / "logs" / f"{name}.log", args.stage_timeout,
            args.max_rss_gib * 1024,
        )  # fmt: skip
        result = StageResult(name, rc, wall, cpu, rss, outputs(before, folder))
        phases = folder / "rehearsal_phases" / f"{name}.json"
        if phases.is_file():
            result.phases = json.loads(phases.read_text())
            result.phases.setdefault("passages", n)
        if name == "candidates":
            project_candidates(result)
        results.append(result)
        log.info(
            "n=%d: %s: exit %d, %.1f s wall, %.1f s CPU, peak RSS %.0f MiB, outputs %.1f MiB",
            n, name, rc, wall, cpu, rss, result.output_bytes / 2**20,
        )  # fmt: skip
        if rc and name in ("extract", "score"):
            log.error("n=%d: %s failed; the later stages need its outputs: next size", n, name)
            break
    corpus = folder / "data" / "corpus.parquet"
    out = work / "results" / f"size-{n}.json"
    stages = [asdict(r) for r in results]
    if out.is_file() and not args.fresh:  # a partial rerun (--only) replaces its stages only
        old = json.loads(out.read_text())
        if old.get("triples") == args.triples:
            new = {s["name"] for s in stages}
            stages = [s for s in old["stages"] if s["name"] not in new] + stages
            order = {name: i for i, (name, _) in enumerate(stage_commands(args, source))}
            stages.sort(key=lambda s: order.get(s["name"], -1))
    project_lws(stages)
    body = {
        "passages": n,
        "triples": args.triples,
        "corpus_docs": int(pq.ParquetFile(corpus).metadata.num_rows) if corpus.is_file() else None,
        "source": meta,
        "stages": stages,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(body, indent=2) + "\n")
    return body


def gen_overrides(args: argparse.Namespace) -> dict[str, Any]:
    over: dict[str, Any] = {"triples": args.triples}
    for key in ("train_queries", "triple_query_pool", "dev_queries", "dev_qrels"):
        value = getattr(args, key)
        if value is not None:
            over[key] = value
    return over


# -- start-up time ------------------------------------------------------------------------


def startup_times(root: Path, modules: tuple[str, ...], repeats: int) -> dict[str, Any]:
    """Median wall time of ``python -c "import <module>"`` (fresh interpreter, cwd ``root``)
    and whether the import pulls in torch / transformers."""
    code = (
        "import sys, time; t = time.perf_counter(); import {m}; d = time.perf_counter() - t; "
        "mod = sys.modules['{m}']; "
        "print(d, ','.join(x for x in ('torch', 'transformers') if x in sys.modules), "
        "mod.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    out: dict[str, Any] = {}
    base = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], cwd=root, env=env, check=True)
        base.append(time.perf_counter() - start)
    out["python -c pass"] = {"median_s": statistics.median(base)}
    for m in modules:
        walls, imports, heavy, where = [], [], "", ""
        for _ in range(repeats):
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-c", code.format(m=m)],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
            )
            walls.append(time.perf_counter() - start)
            if proc.returncode:
                heavy = f"import failed: {proc.stderr.strip().splitlines()[-1]}"
                break
            parts = proc.stdout.split()
            imports.append(float(parts[0]))
            heavy, where = (parts[1], parts[2]) if len(parts) == 3 else ("", parts[-1])
        if where and not Path(where).resolve().is_relative_to(root.resolve()):
            raise RuntimeError(f"{m} was imported from {where}, not from {root}")
        out[m] = {
            "median_s": statistics.median(walls),
            "import_s": statistics.median(imports) if imports else None,
            "heavy": heavy,
        }
    return out


def startup(repeats: int, before: str) -> dict[str, Any]:
    """Start-up times now and at commit ``before`` (a temporary worktree, removed after)."""
    modules = LIGHT_STAGES + MODEL_STAGES
    result = {"now": startup_times(ROOT, modules, repeats), "before_commit": before}
    tree = Path(f"/tmp/rehearsal-before-{before}")
    if tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT)
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(tree), before],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        result["before"] = startup_times(tree, modules, repeats)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=True)
    return result


# -- the tables -----------------------------------------------------------------------------


def _mib(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB" if b >= 2**20 else f"{b / 2**10:,.0f} KiB"


def _secs(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    return f"{s / 60:.1f} min" if s >= 600 else f"{s:.1f} s"


def full_size_table(size: dict[str, Any]) -> list[str]:
    lines = [
        f"Collection {size['passages']:,} passages, {size['triples']:,} triples; extracted "
        f"corpus {size['corpus_docs'] or 0:,} passages.",
        "",
        "| stage | wall | CPU | peak RSS | outputs | rows | note |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for s in size["stages"]:
        rows = sum(o.get("rows", 0) for o in s["outputs"].values())
        note = "" if s["rc"] == 0 else f"**failed (exit {s['rc']})**"
        pr = s.get("projected") or {}
        if pr and s["name"] == "order@lws":
            note += (
                f"on the sampled training candidates; with all {pr['train_rows']:,.0f}: "
                f"≈ {_secs(pr['wall_s'])}, peak RSS ≈ {pr['peak_rss_mib'] / 1024:,.1f} GiB"
            )
        elif pr:
            note += (
                f"training candidates for {pr['sampled_queries']:,} of {pr['train_queries']:,} "
                f"training queries ({1e3 * pr['per_query_s']:.0f} ms each); all of them: "
                f"{_secs(pr['wall_s'])}, {pr['train_rows']:,.0f} rows "
                f"({_mib(pr['train_rows_in_memory_bytes'])} in memory, peak RSS ≥ "
                f"{pr['peak_rss_mib_lower_bound']:,.0f} MiB), "
                f"{_mib(pr['train_candidates_bytes'])} on disk"
            )
        train = s["outputs"].get("data/train_candidates.parquet", {}).get("rows", 0)
        if s["name"] == "candidates" and train and not pr:
            note += f"training candidates for every training query: {train:,} rows"
        if s["name"] == "evaluate@bm25+groups":
            note += "AWRF and counterfactual gap too (F/M/N groups from Ψ, timing only)"
        lines.append(
            f"| {s['name']} | {_secs(s['wall_s'])} | {_secs(s['cpu_s'])} | "
            f"{s['peak_rss_mib']:,.0f} MiB | {_mib(sum(o['bytes'] for o in s['outputs'].values()))}"
            f" | {rows:,} | {note} |"
        )
    return lines


def scaling_table(sizes: list[dict[str, Any]]) -> list[str]:
    """Per stage: wall and peak RSS at each size, and the growth exponent between sizes
    (log-log slope: 1 = linear in the passages)."""
    ns = [s["passages"] for s in sizes]
    head = " / ".join(f"{n / 1e6:g}M" for n in ns)
    lines = [
        f"| stage | wall ({head}) | µs / passage | peak RSS ({head}) | time exponent | "
        "RSS exponent |",
        "|---|---|---|---|---:|---:|",
    ]
    names = [s["name"] for s in sizes[-1]["stages"] if s["name"] != "generate"]
    for name in names:
        rows = [next((x for x in s["stages"] if x["name"] == name), None) for s in sizes]
        if any(r is None for r in rows):
            continue
        walls = [r["wall_s"] for r in rows if r]
        rss = [r["peak_rss_mib"] for r in rows if r]
        per = [w / n * 1e6 for w, n in zip(walls, ns, strict=True)]

        def slope(v: list[float]) -> str:
            if len(v) < 2 or min(v) <= 0:
                return "–"
            return f"{math.log(v[-1] / v[0]) / math.log(ns[-1] / ns[0]):.2f}"

        lines.append(
            f"| {name} | {' / '.join(_secs(w) for w in walls)} | "
            f"{' / '.join(f'{p:.1f}' for p in per)} | "
            f"{' / '.join(f'{r:,.0f}' for r in rss)} MiB | {slope(walls)} | {slope(rss)} |"
        )
    corpus = " / ".join(f"{s['corpus_docs'] or 0:,}" for s in sizes)
    lines += ["", f"Extracted corpus (passages the later stages read): {corpus}."]
    return lines


def model_table(sizes: list[dict[str, Any]]) -> list[str]:
    """One bullet per model, from the largest size where it ran."""
    lines: list[str] = []
    done: set[str] = set()
    stages = [s for size in reversed(sizes) for s in size["stages"]]
    for s in stages:
        if s["name"] in done:
            continue
        done.add(s["name"])
        m = s["phases"]
        if not s["name"].startswith("train+rerank@") or "train" not in m:
            continue
        t, r = m["train"], m.get("rerank", {})
        lines.append(
            f"- **{m['model']}** ({m['params_m']:.1f}M parameters, cpu × {m['threads']} "
            f"threads): set-up on all {m['triples']:,} triples {_secs(m['setup_s'])} (texts "
            f"{_secs(m['texts_s'])}, groups {_secs(m['groups_s'])}); {t['steps']} steps: "
            f"{t['pairs_per_s']:.2f} triples/s, {t['tokens_per_s']:,.0f} tokens/s (mean "
            f"{t['mean_tokens']:.0f} tokens/sequence, padding {100 * t['padding']:.0f}%), "
            f"{t['achieved_gflops']:.1f} GFLOP/s = {100 * t.get('peak_fraction', 0):.0f}% of "
            f"the fp32 matmul peak; 3M triples on this CPU: {_secs(t['projected_cpu_s'])}. "
            f"Rerank {r.get('pairs_per_s', 0):.1f} pairs/s (1,765 × 1,000: "
            f"{_secs(r.get('projected_s', 0))}). Token cache "
            f"{m['token_cache']['bytes_per_pair'] / 1024:.1f} KiB per pair: "
            f"{m['token_cache']['projected_epoch_gib']:.1f} GiB after one epoch of 3M triples "
            f"({m.get('distinct_pairs', 0):,} distinct pairs in {m['triples']:,} triples), "
            f"{m['token_cache']['projected_rerank_gib']:.1f} GiB after reranking every "
            f"candidate. GPU ({m['gpu']['name']}): {m['gpu']['summary']}"
        )
    return lines


def startup_table(st: dict[str, Any]) -> list[str]:
    lines = [
        f"| module | start-up now | torch/transformers now | start-up at {st['before_commit']}"
        " | torch/transformers then |",
        "|---|---:|---|---:|---|",
    ]
    for m, now in st["now"].items():
        then = st.get("before", {}).get(m, {})
        lines.append(
            f"| {m} | {now['median_s']:.2f} s | {now.get('heavy') or 'no'} | "
            f"{then.get('median_s', float('nan')):.2f} s | {then.get('heavy') or 'no'} |"
        )
    return lines


def markdown(body: dict[str, Any]) -> str:
    sizes = body["sizes"]
    m = body["machine"]
    out = [
        f"Date {body['date']}; machine: {m['cpu']}, {m['cores']} cores, {m['mem_gib']} GiB "
        f"RAM, torch {m.get('torch', '?')} ({m.get('torch_threads', '?')} threads).",
        "",
        *full_size_table(sizes[-1]),
    ]
    if len(sizes) > 1:
        out += ["", "Scaling with the collection (triples fixed):", "", *scaling_table(sizes)]
    models = model_table(sizes)
    if models:
        out += ["", "Training and reranking (bounded steps):", "", *models]
    if body.get("matmul"):
        mm = body["matmul"]
        out += ["", f"fp32 matmul ({mm['n']}²): {mm['gflops']:.1f} GFLOP/s on this CPU."]
    if body.get("startup"):
        out += ["", "Process start-up (median of 3):", "", *startup_table(body["startup"])]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--passages", type=int, nargs="+", default=[1_000_000, 4_000_000, FULL_PASSAGES])
    p.add_argument("--triples", type=int, default=FULL_TRIPLES)
    p.add_argument("--work", type=Path, required=True, help="working folder (~12 GB)")
    p.add_argument("--query-set", default="1765", choices=["1765", "215"])
    p.add_argument("--top-k", type=int, default=1000)
    p.add_argument("--train-top-k", type=int, default=100,
                   help="candidates.train_top_k of the profile (LWS reads them)")  # fmt: skip
    p.add_argument("--train-cand-queries", type=int, default=0,
                   help="BM25 training candidates for a sample of N queries (0 = all)")  # fmt: skip
    p.add_argument("--orders", nargs="*", default=list(ORDER_METHODS), choices=list(ORDER_METHODS))
    p.add_argument("--models", nargs="*", default=["bert-mini", "minilm"])
    p.add_argument("--train-steps", type=int, default=20)
    p.add_argument("--rerank-queries", type=int, default=2)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    p.add_argument("--models-at", choices=["largest", "all"], default="largest",
                   help="sizes to run train+rerank at (its throughput does not depend on "
                   "the collection)")  # fmt: skip
    p.add_argument("--stage-timeout", type=float, default=3 * 3600)
    p.add_argument("--max-rss-gib", type=float, default=22.0,
                   help="kill a stage past this resident size (recorded as failed)")  # fmt: skip
    p.add_argument("--only", nargs="*", default=None, help="run only these stages (by name)")
    p.add_argument("--fresh", action="store_true", help="delete each run folder first")
    p.add_argument("--no-startup", action="store_true")
    p.add_argument("--before", default=BEFORE, help="commit of the 'before' start-up times")
    for key in ("train_queries", "triple_query_pool", "dev_queries", "dev_qrels"):
        p.add_argument(f"--{key.replace('_', '-')}", type=int, default=None,
                       help="generator setting (default: MS MARCO's)")  # fmt: skip
    p.add_argument("--report-only", action="store_true",
                   help="only rebuild rehearsal.md from <work>/results")  # fmt: skip
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    # SIGTERM (timeout, kill) unwinds like Ctrl-C: the temporary worktree is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = args.work / "results"
    results.mkdir(parents=True, exist_ok=True)
    summary = results / "rehearsal.json"
    body: dict[str, Any] = json.loads(summary.read_text()) if summary.is_file() else {}
    started = time.perf_counter()
    if args.report_only:
        files = [results / f"size-{n}.json" for n in sorted(args.passages)]
        sizes = [json.loads(f.read_text()) for f in files]
    else:
        sizes = [run_size(args, n) for n in sorted(args.passages)]
    body.update(
        date=dt.date.today().isoformat(),
        machine=machine(),
        # a folder of this machine is not a result (and would name a local path in git)
        args={k: LOCAL if isinstance(v, Path) else v for k, v in vars(args).items()},
        sizes=sizes,
    )
    if args.models and not args.report_only:
        from benchmarks.rehearsal.model_bench import matmul_gflops

        body["matmul"] = matmul_gflops(args.threads)
    if not (args.no_startup or args.report_only):
        body["startup"] = startup(3, args.before)
    body["seconds"] = round(time.perf_counter() - started, 1)
    summary.write_text(json.dumps(body, indent=2) + "\n")
    text = markdown(body)
    (results / "rehearsal.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
