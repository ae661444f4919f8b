"""Block outgoing network connections in every Python process that imports this module.

Python imports `sitecustomize` at start-up from the first folder on its path that has one, so
a subprocess started with this folder first on `PYTHONPATH` (a DVC stage, the `ir_datasets`
command) cannot resolve a host name or connect anywhere but to a Unix socket or this machine:
each attempt is appended to the file named by `NO_NETWORK_LOG` and fails with
`NetworkBlocked`, an `OSError` as a refused connection is. The in-process fixture
(`tests/conftest.py`, `no_network`) calls `install` with pytest's `monkeypatch.setattr`.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

LOCAL = {None, "", "localhost", "127.0.0.1", "::1"}


class NetworkBlockedError(OSError):
    """A connection attempt while the tests block the network."""


def install(record: Callable[[str], None], set_attr: Callable[..., Any] = setattr) -> None:
    """Replace `socket.getaddrinfo` and `socket.socket.connect(_ex)` with versions that call
    `record(what)` and raise `NetworkBlockedError` for anything not local."""
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def refuse(what: str) -> None:
        record(what)
        raise NetworkBlockedError(f"network blocked by the tests: {what}")

    def remote(sock: socket.socket, address: Any) -> bool:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return False
        return not (isinstance(address, tuple) and address[0] in LOCAL)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in LOCAL:
            refuse(f"getaddrinfo {name!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(sock: socket.socket, address: Any) -> None:
        if remote(sock, address):
            refuse(f"connect {address!r}")
        real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        if remote(sock, address):
            refuse(f"connect {address!r}")
        return real_connect_ex(sock, address)

    set_attr(socket, "getaddrinfo", getaddrinfo)
    set_attr(socket.socket, "connect", connect)
    set_attr(socket.socket, "connect_ex", connect_ex)


def _append(path: str) -> Callable[[str], None]:
    def record(what: str) -> None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {what}\n")

    return record


if os.environ.get("NO_NETWORK_LOG"):
    install(_append(os.environ["NO_NETWORK_LOG"]))
