"""Markdown table of the newest row of every ``benchmarks/results/*.jsonl`` (for the README).

python -m benchmarks.summarise
"""

from __future__ import annotations

import json
import sys
from typing import Any

from benchmarks.common import RESULTS


def _newest(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.jsonl"
    if not path.is_file():
        return None
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return json.loads(lines[-1]) if lines else None


def _fmt(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def rows() -> list[str]:
    out = [
        "| step | ours (median) | naive (median) | ours vs naive | context |",
        "|---|---|---|---|---|",
    ]
    r = _newest("scoring")
    if r:
        out.append(
            f"| Ψ/ζ/lexicon scoring, {r['docs']:,} passages × {r['words_per_doc']} words "
            f"| {_fmt(r['ours_median'])} s | {_fmt(r['naive_median'])} s "
            f"| **{r['speedup']:.1f}×** | {r['ours_us_per_doc']:.2f} µs/doc; 8.8M passages ≈ "
            f"{r['extrapolated_8_8M_s']:.0f} s; peak RSS {r['peak_rss_mib_after_ours']:,.0f} MiB "
            f"(corpus in memory: {r['peak_rss_mib_before_scoring']:,.0f} MiB) |"
        )
    r = _newest("metrics")
    if r:
        out.append(
            f"| metric suite (§4.1–4.4, {r['metrics']} aggregates), {r['queries']:,} queries × "
            f"{r['depth']} | {_fmt(r['ours_median'])} s | {_fmt(r['naive_median'])} s "
            f"| **{r['speedup']:.1f}×** | first call incl. numba JIT: "
            f"{r['ours_first_call_s']:.1f} s |"
        )
    r = _newest("train")
    if r and "arch" in r:  # model families (issue 11): grouped triples, cached bottom
        out.append(
            f"| training, MiniLM L{r['layers']} {r['arch']}, {r['groups_per_step']} groups of "
            f"{r['group_size']} per step, top {r['train_layers']} layer(s) trained, max_len "
            f"{r['max_len']} | {_fmt(r['ours_median'])} triples/s "
            f"| {_fmt(r['naive_median'])} triples/s | **{r['speedup']:.1f}×** "
            f"| {r['steps']} steps per run, {r['device']} |"
        )
    elif r:
        out.append(
            f"| training, MiniLM L{r['layers']}, batch {r['batch_triples']} triples, max_len "
            f"{r['max_len']} | {_fmt(r['ours_median'])} pairs/s; with length buckets "
            f"{_fmt(r['bucketed_median'])} | {_fmt(r['naive_median'])} pairs/s "
            f"| **{r['speedup']:.1f}×**; **{r['bucketed_speedup']:.1f}×** with buckets "
            f"| {r['steps']} steps per run, {r['device']} |"
        )
    r = _newest("rerank")
    if r and "arch" in r:
        out.append(
            f"| reranking, MiniLM L{r['layers']} {r['arch']}, {r['pairs']:,} pairs over "
            f"{r['distinct_docs']:,} documents, batch {r['batch']}, max_len {r['max_len']} "
            f"| {_fmt(r['ours_median'])} pairs/s | {_fmt(r['naive_median'])} pairs/s "
            f"| **{r['speedup']:.1f}×** | encoder sequences {r['ours_sequences']:,} vs "
            f"{r['naive_sequences']:,}; max score difference {r['max_abs_score_diff']:.1e}, "
            f"{r['device']} |"
        )
    elif r:
        out.append(
            f"| reranking, MiniLM L{r['layers']}, {r['sequences']:,} sequences, batch "
            f"{r['batch']}, max_len {r['max_len']} | {_fmt(r['ours_median'])} seq/s "
            f"| {_fmt(r['naive_median'])} seq/s | **{r['speedup']:.1f}×** "
            f"| max score difference {r['max_abs_score_diff']:.1e}, {r['device']} |"
        )
    r = _newest("bm25")
    if r:
        out.append(
            f"| BM25 top-{r['k']}, {r['passages']:,} passages × {r['queries']:,} queries "
            f"({r['date']}) | {r['ours_median']:.3g} ms/query on {r['threads']} threads; "
            f"{r['ours_1_thread_median']:.3g} on one | {r['naive_median']:.3g} ms/query | "
            f"**{r['speedup']:.1f}×**; **{r['speedup_1_thread']:.1f}×** on one thread | every "
            f"query's top {r['k']} identical (documents, order, float32 scores); median "
            f"{r['median_postings'] / 1000:.1f}k postings per query |"
        )
    r = _newest("extract")
    if r:
        out.append(
            f"| extraction, {r['triples']:,} fake triples → Parquet | {_fmt(r['ours_median'])} s, "
            f"peak RSS {r['ours_peak_rss_mib']:,.0f} MiB | {_fmt(r['naive_median'])} s, peak RSS "
            f"{r['naive_peak_rss_mib']:,.0f} MiB | {r['speedup']:.1f}× time, "
            f"**{r['memory_ratio']:.1f}× less memory** | streamed in 50k-row batches |"
        )
    return out


def main() -> None:
    sys.stdout.write("\n".join(rows()) + "\n")
    r = _newest("repro")
    if r:
        fam = ", ".join(f"{k} {v:.0f} s" for k, v in r["by_family_s"].items())
        total = r["total_s"] / 60
        mode = "from an empty cache" if r.get("mode") == "empty cache" else "--force"
        line = f"\n`dvc repro` ({mode}): {total:.1f} min, {r['stages']} stages ({fam}).\n"
        sys.stdout.write(line)


if __name__ == "__main__":
    main()
