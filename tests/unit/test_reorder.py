"""The opt-in order plugin (tests/reorder.py) really reorders: reversed, and a seeded shuffle
that repeats with its seed; without the option, nothing moves."""

from __future__ import annotations

from typing import Any

import pytest

from tests import reorder


class _Config:
    def __init__(self, order: str | None) -> None:
        self.order = order

    def getoption(self, name: str) -> str | None:
        assert name == "--reorder"
        return self.order


def _order(option: str | None) -> list[str]:
    items: list[Any] = list("abcdefgh")
    reorder.pytest_collection_modifyitems(_Config(option), items)  # type: ignore[arg-type]
    return items


def test_reverse_and_seeded_orders() -> None:
    assert _order(None) == list("abcdefgh")
    assert _order("reverse") == list("hgfedcba")
    shuffled = _order("3")
    assert sorted(shuffled) == list("abcdefgh") and shuffled != list("abcdefgh")
    assert _order("3") == shuffled
    with pytest.raises(pytest.UsageError, match="expected 'reverse' or an integer seed"):
        _order("backwards")
