"""The README's results section is replaced, not appended to."""

from __future__ import annotations

import pytest

from pipeline.report.readme import CONTROLS_END, CONTROLS_START, END, START, embed, embed_controls


def test_embed_replaces_between_markers_idempotently() -> None:
    readme = f"## What the default found\n{START}\nold table\n{END}\nafter\n"
    summary = ("# Summary\n\n## What the default found\n\nOn X: 2 methods.\n\n| m |\n\n"
               "## Cut-off 10\n\n| long |\n")  # fmt: skip
    once = embed(readme, summary)
    assert "old table" not in once and "On X: 2 methods.\n\n| m |" in once
    assert "Cut-off 10" not in once and "| long |" not in once  # stays in metrics/summary.md
    assert "[metrics/summary.md](metrics/summary.md)" in once
    assert once.startswith("## What the default found\n") and once.endswith(f"{END}\nafter\n")
    assert embed(once, summary) == once


def test_embed_without_markers() -> None:
    with pytest.raises(ValueError, match="no <!-- results:start -->"):
        embed("no markers", "x")


def test_a_summary_without_the_answer_says_so() -> None:
    out = embed(f"{START}\n{END}\n", "# Summary\n\n## Cut-off 10\n\nA\n")
    assert "predates this section" in out and "\nA\n" not in out


def test_decisions_embed_the_controls_section_or_say_it_is_missing() -> None:
    doc = f"## Controls\n\nintro\n\n{CONTROLS_START}\nold\n{CONTROLS_END}\n\n## Next\n"
    summary = ("# Summary\n\n## Findings\n\nF\n\n## Controls: each treatment against its "
               "control\n\n| a − b | x |\n\n- **a − b**: **fairer**.\n\n## Transfer\n\nT\n")
    once = embed_controls(doc, summary)
    assert "| a − b | x |" in once and "- **a − b**: **fairer**." in once
    assert "## Transfer" not in once and "Findings" not in once and "old" not in once
    assert once.endswith(f"{CONTROLS_END}\n\n## Next\n") and embed_controls(once, summary) == once
    placeholder = embed_controls(doc, "# Summary\n\n## Findings\n\nF\n")
    assert "predates its Controls section" in placeholder
    with pytest.raises(ValueError, match="no <!-- controls:start -->"):
        embed_controls("no markers", summary)
