"""Numbers in the docs' prose that no value marker covers (pipeline/report/doc_values.py):
a number with a unit of runs, sizes, counts or times stands in prose only as a generated
value, or in `NOT_RESULTS` with why it stays typed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pipeline.report.doc_values import VALUE

NUMBER = re.compile(
    r"(?<![\w.@/=-])(\d[\d,.]*\d|\d)\s?(%|min\b|minutes?\b|s\b|h\b|MB|GB|MiB|GiB|KB|kB|stages?\b"
    r"|methods?\b|seeds?\b|folds?\b|quer(?:y|ies)\b|models?\b|columns\b|files\b|tests\b|×"
    r"|documents\b|triples\b|passages\b|steps\b|questions\b|pairs\b)"
)
"""A number with a unit of runs, sizes, counts or times."""


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """`(line number, line)` of prose: not in a fenced block, a table row or a generated
    block (the README's results, decisions.md's controls), with marked values and HTML
    comments removed."""
    fenced = results = False
    for i, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        if "<!-- results:start -->" in line or "<!-- controls:start -->" in line:
            results = True
        if "<!-- results:end -->" in line or "<!-- controls:end -->" in line:
            results = False
            continue
        if fenced or results or stripped.startswith("|"):
            continue
        yield i, re.sub(r"<!--.*?-->", "", VALUE.sub("", line))


def unused_exemptions(paths: Sequence[Path], exempt: Mapping[str, Sequence[tuple[str, str]]]
                      ) -> list[str]:  # fmt: skip
    """Exemptions whose text no longer stands on a prose line with a number of its own."""
    lines = {p.name: [line for _, line in prose_lines(p.read_text(encoding="utf-8"))]
             for p in paths}  # fmt: skip
    return [f"NOT_RESULTS[{name!r}]: {snippet!r} is on no prose line with a number (remove it)"
            for name, entries in exempt.items() for snippet, _ in entries
            if not any(snippet in line and NUMBER.search(snippet) for line in lines.get(name, []))
            ]  # fmt: skip


def unmarked_numbers(path: Path, exempt: Mapping[str, Sequence[tuple[str, str]]]) -> list[str]:
    """One message per number with a unit in `path`'s prose that is neither a marked value
    nor exempt (`exempt[file name]`: `(text on its line, why)`)."""
    allowed = exempt.get(path.name, ())
    problems = []
    for i, line in prose_lines(path.read_text(encoding="utf-8")):
        for m in NUMBER.finditer(line):
            if any(snippet in line and m.group(0) in snippet for snippet, _ in allowed):
                continue
            problems.append(
                f"{path.name}:{i}: {m.group(0)!r} is a number about runs, sizes, counts or "
                "times: generate it (`<!-- value NAME -->…<!-- /value -->`, "
                "pipeline/report/doc_values.py) or list it in NOT_RESULTS with why"
            )
    return problems


DATED = "a dated record: what was measured or concluded then, not regenerated"
NOT_RESULTS: dict[str, list[tuple[str, str]]] = {
    "pipeline.md": [
        ("cost ~10 s of start-up each", DATED + " (the rerank stages before issue 21)"),
        ("of 17–18% of the female/male documents", "a fact of the shipped data (decisions.md)"),
    ],
    "troubleshooting.md": [
        ("answering 10 of 117 queries", "an example of a partial run, not a result"),
        ("folds=500` stops with \"500 folds need at least 500", "an example of a refused value "
         "and its message, not a result"),
    ],
    "decisions.md": [
        ("0.0973 ± 0.0017 over 3 seeds", DATED + " (until 2026-11-26)"),
        ("neutral version first on 61% of the queries instead of", DATED + " (lr 6e-4 run)"),
        ("78%; 3 seeds, 5 folds, 2026-11-26", DATED + " (lr 6e-4 run)"),
        ("(one trained layer, ~58 queries per", DATED),
        ("default moved to 3 seeds × 2 folds", DATED + " (2026-11-25)"),
        ("Grep-BiasIR triples (1,218 triples", DATED + " (2026-11-25)"),
        ("45% of the positives have", DATED + " (2026-11-25)"),
        ("(2.7×): buckets 0–6", DATED + " (2026-11-25)"),
        ("drawn together in random order for about 80% of", DATED + " (2026-11-25)"),
        ("the last 20% of steps", DATED + " (2026-11-25)"),
        ("0.93 → 0.20 (4.6×) and the neutral 45%", DATED + " (2026-11-25)"),
        ("in ≤ 40, then ≤ 20 minutes, on the", "issues 21 and 34's targets"),
        ("methods need 16.6 min of the two cores", DATED + " (bench_repro, 2026-11-28)"),
        ("(per train stage 5.4 s of start-up, 2.3 s of writing, about 5 s of", DATED
         + " (that run's stage logs)"),
        ("`transfer.fold_models: all`: 3.7 s each)", DATED + " (bench_train_phases, 2026-11-28)"),
        ("instead of all six would save about 4.4 min", DATED + " (from bench_train_phases)"),
        ("as before issue 29) about 2.6 min", DATED + " (from bench_train_phases)"),
        ("With 5 folds", "the alternative the default did not take (5 folds)"),
        ("they would train 5 models per seed", "the alternative the default did not take"),
        ("default from 40 to 25.9 min (2026-11-25)", DATED),
        ("(3 seeds × 2 inner folds)", "the recipe selection's design (stages/select_recipe.py)"),
        ("models: 11.7 min wall, 734 s CPU", DATED + " (the selection run of 2026-11-28)"),
        ("(mean ± sd over 3 seeds;", "the recipe selection's design (stages/select_recipe.py)"),
        ("in the 6 λ = 1 models (lr 2e-4 runs", DATED + " (the lr 2e-4 runs of 2026-11-28)"),
        ("(all 702 documents, 5-fold", "a fact of the shipped data and the probe's design"),
        ("(about 58 steps at the ranker's", DATED + " (the lr 2e-4 runs of 2026-11-28)"),
    ],
    "dependencies.md": [
        ("Installs from wheels in about 10 s", DATED + " (installing python-terrier)"),
        ("adds about 80 MB", DATED + " (installing python-terrier)"),
        ("20 s), then `bash scripts/setup.sh`", DATED + " (running scripts/lock.sh)"),
    ],
    "paper-scale.md": [
        ("(about 5 min on one GPU)", "an estimate of the benchmark's own run time"),
        ("at the BERT-mini (4 × 256)", "the model's shape (layers × width)"),
        ("and MiniLM (6 × 384) shapes", "the model's shape (layers × width)"),
        ("`MinJobAge` (5 min by default)", "SLURM's default setting"),
        ("four methods × 3 seeds", "the documented grid file's example"),
        ("the tiny profile's 2 methods × 2 seeds", "the design of tests/stages/test_grid_slurm.py"),
        ("estimated 35 min", "ir_datasets' own estimate"),
        ("The 1,765 query set", "the name of a shipped query set"),
        ("45 min and", DATED + " (benchmarks/README.md, Paper-scale rehearsal)"),
        ("13.5 GiB peak", DATED + " (benchmarks/README.md, Paper-scale rehearsal)"),
        ("17–18% of its F/M documents", "a fact of the shipped data (decisions.md)"),
        ("(1,024 triples)", "arithmetic of the example: 64 batches of 16"),
        ("a window is 0.03% of the run", "arithmetic of the example: 1,024 of 3M"),
        ("2.4 GiB at a tenth", DATED + " (benchmarks/README.md, TREC Fair 2022 rehearsal)"),
        ("a projected 24 GiB at full size, more than a 24 GiB machine has", DATED),
        ("hold about 2.1M relevant articles for 50 queries", "a fact of the TREC Fair data"),
    ],
}
"""Numbers with a unit that stay typed, each with why: dated records (what a run or an
experiment showed on its date; the text says when), facts of data or tools, arithmetic of an
example. Every other such number in prose is a marked value."""
