"""Copy the generated results table into README.md between two marker lines.

`python -m pipeline.report.readme` after `dvc repro`: the README's results section is then
generated from `metrics/summary.md`, never typed by hand.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from pipeline import io
from pipeline.errors import InputError
from pipeline.report.answer import TITLE as ANSWER

log = logging.getLogger(__name__)
START, END = "<!-- results:start -->", "<!-- results:end -->"


def embed(readme: str, summary: str) -> str:
    """`readme` with the text between the markers replaced by the *What the default found*
    section of `summary` (`pipeline.report.answer`: its paragraph and headline table; the
    README's own heading stays), pointing at the file for everything else (issue 41: the
    README held 400 lines of generated tables before saying what the pipeline does)."""
    if START not in readme or END not in readme:
        raise InputError(f"README has no {START} … {END} markers to replace")
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    found = section(summary, ANSWER)
    missing = "_The committed `metrics/summary.md` predates this section: run `dvc repro`._"
    body = found.split("\n", 1)[-1].strip() if found is not None else missing
    body = body.replace("](../plots/", "](plots/")  # figures linked from metrics/summary.md
    note = ("_Generated from `metrics/summary.md` by `python -m pipeline.report.docs --write`; "
            "every table, the Findings per method, the controls, the judged scope, the "
            "transfer collection and the inference-time methods are in "
            "[metrics/summary.md](metrics/summary.md)._")  # fmt: skip
    return f"{head}{START}\n{body}\n\n{note}\n{END}{tail}"


CONTROLS_START, CONTROLS_END = "<!-- controls:start -->", "<!-- controls:end -->"
CONTROLS = "Controls"
"""The section of summary.md that docs/decisions.md embeds ("What the controls show")."""


def section(summary: str, title: str) -> str | None:
    """The ``## <title>…`` section of ``summary`` (up to the next ``## `` heading), or null."""
    part = next((p for p in summary.split("\n## ")[1:] if p.startswith(title)), None)
    return None if part is None else "## " + part.rstrip()


def embed_controls(doc: str, summary: str) -> str:
    """``doc`` (docs/decisions.md) with the text between the controls markers replaced by the
    *Controls* section of ``summary`` (headings demoted); a placeholder when the summary has
    none yet (results that predate it)."""
    if CONTROLS_START not in doc or CONTROLS_END not in doc:
        raise InputError(f"docs/decisions.md has no {CONTROLS_START} … {CONTROLS_END} markers")
    head, rest = doc.split(CONTROLS_START, 1)
    _, tail = rest.split(CONTROLS_END, 1)
    found = section(summary, CONTROLS)
    if found is None:
        body = ("_The committed `metrics/summary.md` predates its Controls section: regenerate "
                "it (`dvc repro`), then `python -m pipeline.report.docs --write`._")  # fmt: skip
    else:
        body = found.replace("\n## ", "\n### ").removeprefix("## ").split("\n", 1)[-1].strip()
        body = ("_Generated from the Controls section of `metrics/summary.md` by `python -m "
                "pipeline.report.docs --write`._\n\n" + body)  # fmt: skip
    return f"{head}{CONTROLS_START}\n{body}\n{CONTROLS_END}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--readme", default="README.md")
    parser.add_argument("--summary", default="metrics/summary.md")
    ns = parser.parse_args()
    logging.basicConfig(level="INFO")
    text = embed(Path(ns.readme).read_text(encoding="utf-8"), io.read_text(ns.summary))
    io.write_text(text, ns.readme)
    log.info("updated %s from %s", ns.readme, ns.summary)


if __name__ == "__main__":
    main()
