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

log = logging.getLogger(__name__)
START, END = "<!-- results:start -->", "<!-- results:end -->"


def embed(readme: str, summary: str) -> str:
    """`readme` with the text between the markers replaced by `summary` (its title demoted)."""
    if START not in readme or END not in readme:
        raise InputError(f"README has no {START} … {END} markers to replace")
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    body = summary.replace("# Summary\n", "", 1).replace("\n## ", "\n### ").strip()
    note = "_Generated from `metrics/summary.md` by `python -m pipeline.report.readme`._"
    return f"{head}{START}\n{note}\n\n{body}\n{END}{tail}"


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
