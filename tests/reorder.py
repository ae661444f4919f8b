"""Run the tests in another order, to find tests that pass only after (or before) others.

An opt-in pytest plugin (issue 31: a test passed or failed depending on a process-wide cache
that an earlier test had filled): ``python -m pytest -p tests.reorder --reorder reverse``
runs the collected tests last to first, ``--reorder 7`` in a random order drawn with seed 7
(printed in the header, so a failing order can be replayed). Without ``--reorder`` it changes
nothing. No dependency: a shuffle of the collected items.
"""

from __future__ import annotations

import random

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reorder",
        default=None,
        help="'reverse', or an integer seed of a random order of the collected tests",
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    order = config.getoption("--reorder")
    return None if order is None else f"test order: {order} (tests.reorder)"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    order = config.getoption("--reorder")
    if order is None:
        return
    if order == "reverse":
        items.reverse()
        return
    try:
        seed = int(order)
    except ValueError:
        raise pytest.UsageError(
            f"--reorder {order!r}: expected 'reverse' or an integer seed"
        ) from None
    random.Random(seed).shuffle(items)
