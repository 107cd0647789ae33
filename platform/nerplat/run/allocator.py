"""The malloc of trial workers: an embedded Ray preloads tcmalloc into them when the machine has it.

Under Ray, an MRC trial worker on glibc's malloc kept growing until Ray's memory monitor killed it,
while the same trial in `nerplat train` did not: the large buffers of varying size that training frees
stay on glibc's heaps (fewer arenas did not help). With tcmalloc the worker settled at its peak and
trained faster than on glibc; jemalloc stayed small but trained slower, and tcmalloc's aggressive
decommit slower still (docs/performance.md, "Trial workers' malloc", measured by docs/malloc-probe.sh).
A worker Tune reuses for trial after trial carries its heap along: on glibc two reused CE-2T workers
reached 10 and 9 GB in 18 minutes of replicates and Ray's memory monitor ended the run, so on the
C library's malloc each trial gets a fresh worker (`reuse_workers`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from ctypes.util import find_library
from functools import cache
from pathlib import Path

TCMALLOC = "tcmalloc_minimal"  # Debian's libtcmalloc-minimal4 (gperftools without the profilers)
# What a process's /proc/self/maps shows when an allocator other than the C library's is loaded.
KNOWN_MALLOCS = {"tcmalloc": "/libtcmalloc", "jemalloc": "/libjemalloc"}


@cache
def installed_tcmalloc() -> str | None:
    """The file name of tcmalloc's library (`libtcmalloc_minimal.so.4`) when the loader finds it."""
    return find_library(TCMALLOC) if sys.platform.startswith("linux") else None


def worker_preload(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment that makes an embedded Ray's workers allocate with tcmalloc: empty when
    the user set LD_PRELOAD (an empty one keeps glibc's malloc) or tcmalloc is not installed."""
    if "LD_PRELOAD" in environ:
        return {}
    library = installed_tcmalloc()
    return {"LD_PRELOAD": library} if library else {}


@cache
def process_malloc() -> str:
    """The allocator of this process: `tcmalloc` or `jemalloc` when one is loaded, else `system`."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux
        return "system"
    return next((name for name, library in KNOWN_MALLOCS.items() if library in maps), "system")


def reuse_workers(environ: Mapping[str, str]) -> bool:
    """Whether Tune may hand an embedded Ray's worker trial after trial: only when its malloc is not
    the C library's (tcmalloc preloaded, or a preload the user chose), whose heap a reused worker
    carries from trial to trial."""
    return bool(worker_preload(environ)) or bool(environ.get("LD_PRELOAD"))


def worker_malloc_line(environ: Mapping[str, str]) -> str:
    """What `nerplat run` says of the embedded Ray's workers' malloc (`worker_preload`'s choice)."""
    preload = worker_preload(environ)
    if preload:
        return f"trial workers allocate with tcmalloc ({preload['LD_PRELOAD']})"
    if environ.get("LD_PRELOAD"):
        return f"trial workers inherit LD_PRELOAD={environ['LD_PRELOAD']!r}"
    return (
        "trial workers use the C library's malloc, a fresh worker per trial (a reused one's heap grows; "
        "with tcmalloc, Debian's libtcmalloc-minimal4, workers are reused and stay flat: docs/performance.md)"
    )
