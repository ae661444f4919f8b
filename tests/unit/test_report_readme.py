"""The README's results section is replaced, not appended to."""

from __future__ import annotations

import pytest

from pipeline.report.readme import END, START, embed


def test_embed_replaces_between_markers_idempotently() -> None:
    readme = f"intro\n{START}\nold table\n{END}\nafter\n"
    summary = "# Summary\n\n## Cut-off 10\n\n| m |\n"
    once = embed(readme, summary)
    assert "old table" not in once
    assert "### Cut-off 10" in once
    assert once.startswith("intro\n") and once.endswith(f"{END}\nafter\n")
    assert embed(once, summary) == once


def test_embed_without_markers() -> None:
    with pytest.raises(ValueError, match="no <!-- results:start -->"):
        embed("no markers", "x")


def test_long_sections_stay_in_the_summary() -> None:
    summary = "# Summary\n\n## Cut-off 10\n\nA\n\n## Cut-off 20\n\nB\n\n## Findings\n\nC\n"
    out = embed(f"{START}\n{END}\n", summary)
    assert "### Cut-off 10" in out and "### Findings" in out and "C" in out
    assert "Cut-off 20" not in out and "\nB\n" not in out
