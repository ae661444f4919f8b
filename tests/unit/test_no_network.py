"""The network block the offline tests rely on (`tests/offline/sitecustomize.py`) blocks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.conftest import NoNetwork

CONNECT = (
    "import socket\n"
    "try:\n"
    "    socket.create_connection(('data.boisestate.edu', 443), timeout=3)\n"
    "except OSError as e:\n"
    "    print(type(e).__name__)\n"
)


def test_no_host_is_reached_in_process_or_in_a_subprocess(no_network: NoNetwork) -> None:
    with pytest.raises(OSError, match="network blocked by the tests"):
        socket.create_connection(("msmarco.z22.web.core.windows.net", 443), timeout=3)
    with pytest.raises(OSError, match="network blocked"), socket.socket() as sock:
        sock.connect(("192.0.2.1", 80))  # an address, no name to resolve
    assert no_network.attempts == [
        "getaddrinfo 'msmarco.z22.web.core.windows.net'",
        "connect ('192.0.2.1', 80)",
    ]
    env = {**os.environ, **no_network.env}
    proc = subprocess.run(
        [sys.executable, "-c", CONNECT], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.strip() == "NetworkBlockedError"
    assert [line.split(" ", 1)[1] for line in no_network.logged()] == [
        "getaddrinfo 'data.boisestate.edu'"
    ]
    no_network.attempts.clear()  # expected: the fixture would fail the test otherwise
    no_network.log.unlink()
