"""The README's results section is replaced, not appended to."""

from __future__ import annotations

import pytest

from pipeline.report.readme import CONTROLS_END, CONTROLS_START, END, START, embed, embed_controls


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
