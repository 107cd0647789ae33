"""Ports and answers on 127.0.0.1: what the local servers (the UI's, Postgres, `nerplat serve`)
and the benches that start them probe before and after they bind."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A port nothing listens on now and this process has not handed out before.

    The kernel's pick alone may repeat itself between two calls when the first port is not yet bound
    (a test's Prometheus drew the port it was to scrape); another process may still take it before use.
    """
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def port_in_use(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def answers(url: str, timeout: float = 1.0) -> bool:
    """`url` answers a GET with HTTP 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False
