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
