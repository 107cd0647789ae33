"""Time limits of tests measured against the host, so a loaded machine slows a test but cannot fail it.

A test that waits for an event (a server answers, a trial finishes) still needs a limit, or a broken
build hangs; a limit fixed in seconds fails a correct build on a busy machine. `scaled` stretches a
limit by how many runnable processes share each core (the load average of the last minute over the
cores this process may use, never below 1): an idle machine keeps the limit as written, and a real
hang still fails, later.
"""

from __future__ import annotations

import os


def slowdown() -> float:
    """Runnable processes per usable core over the last minute, at least 1: how much longer work waits
    for a core than on the idle machine."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1.0, os.getloadavg()[0] / cores)


def scaled(seconds: float) -> float:
    """`seconds` as written on the idle machine, stretched by the host's current `slowdown`."""
    return seconds * slowdown()
