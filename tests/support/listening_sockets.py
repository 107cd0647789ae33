"""TCP sockets a process tree listens on, read from /proc (Linux; no psutil in this environment)."""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class Listener:
    pid: int
    process: str
    address: str
    port: int

    @property
    def loopback_only(self) -> bool:
        ip = ipaddress.ip_address(self.address)
        mapped = getattr(ip, "ipv4_mapped", None)  # "::ffff:127.0.0.1" is IPv4 loopback
        return (mapped or ip).is_loopback


def _decode(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))  # four host-order 32-bit words
    return socket.inet_ntop(socket.AF_INET6, words)


def _listening_by_inode() -> dict[str, tuple[str, int]]:
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as stream:
            for line in stream.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    address, port = fields[1].split(":")
                    found[fields[9]] = (_decode(address), int(port, 16))
    return found


def process_tree(root: int) -> set[int]:
    """`root` and every descendant still running."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stream:
                    parents[int(entry)] = int(stream.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, todo = {root}, [root]
    while todo:
        parent = todo.pop()
        children = {pid for pid, ppid in parents.items() if ppid == parent} - tree
        tree |= children
        todo += children
    return tree


def listeners(pids: set[int]) -> list[Listener]:
    """Every listening TCP socket held open by one of `pids`."""
    sockets, found = _listening_by_inode(), []
    for pid in sorted(pids):
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8") as stream:
                name = stream.read().strip()
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:  # the process ended meanwhile
            continue
        for link in links:
            inode = link[len("socket:[") : -1] if link.startswith("socket:[") else None
            if inode in sockets:
                found.append(Listener(pid, name, *sockets[inode]))
    return found
