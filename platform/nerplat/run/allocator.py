"""The malloc of trial workers: an embedded Ray preloads tcmalloc into them when the machine has it.

Under Ray, an MRC trial worker on glibc's malloc grew by about 0.6 GB a minute (1.8 to 3.7 GB in
three minutes; Ray's memory monitor killed two at 10 GB), while the same trial in `nerplat train`
stayed near 2 GB: the large buffers of varying size that training frees stay on glibc's heaps
(MALLOC_ARENA_MAX=1 or 2 grew the same). With tcmalloc the worker settled at 6.3 GB and stayed
there through ten epochs, its training taking 18% less time than on glibc; jemalloc stayed near
2 GB but took 16% more, and tcmalloc's aggressive decommit twice tcmalloc's time (docs/performance.md,
"Trial workers' malloc").
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


def worker_malloc_line(environ: Mapping[str, str]) -> str:
    """What `nerplat run` says of the embedded Ray's workers' malloc (`worker_preload`'s choice)."""
    preload = worker_preload(environ)
    if preload:
        return f"trial workers allocate with tcmalloc ({preload['LD_PRELOAD']})"
    if "LD_PRELOAD" in environ:
        return f"trial workers inherit LD_PRELOAD={environ['LD_PRELOAD']!r}"
    return "trial workers use the C library's malloc (tcmalloc keeps their memory flat: docs/performance.md)"
