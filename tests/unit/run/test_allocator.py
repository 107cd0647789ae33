"""Which malloc an embedded Ray's trial workers get, and how a process tells which one it runs on.

These need nothing installed: where tcmalloc would be found, the loader's answer is given. That Debian's
tcmalloc is found and a worker really runs on it is tests/integration/run/test_allocator.py's (`make test`
installs the package).
"""

from __future__ import annotations

import pytest
from nerplat_processes import malloc_of_a_process

from nerplat.run import allocator
from nerplat.run.allocator import reuse_workers, worker_malloc_line, worker_preload

SONAME = "libtcmalloc_minimal.so.4"  # Debian's libtcmalloc-minimal4


@pytest.fixture
def tcmalloc_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "installed_tcmalloc", lambda: SONAME)


def test_workers_preload_tcmalloc_unless_the_user_chose_a_preload(tcmalloc_found):
    assert worker_preload({}) == {"LD_PRELOAD": SONAME}
    assert worker_preload({"LD_PRELOAD": ""}) == {}  # an empty LD_PRELOAD keeps glibc's malloc
    assert worker_preload({"LD_PRELOAD": "libjemalloc.so.2"}) == {}  # inherited by the workers as it is
    assert worker_malloc_line({}) == f"trial workers allocate with tcmalloc ({SONAME})"


def test_without_tcmalloc_workers_keep_the_system_malloc(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(allocator, "installed_tcmalloc", lambda: None)
    assert worker_preload({}) == {}
    assert worker_malloc_line({}).startswith("trial workers use the C library's malloc, a fresh worker per trial")


@pytest.mark.parametrize(
    ("found", "environ", "reused"),
    [
        (SONAME, {}, True),  # tcmalloc preloaded: a reused worker stays flat
        (None, {}, False),  # the C library's malloc: a reused worker's heap grows trial after trial
        (SONAME, {"LD_PRELOAD": ""}, False),  # the user kept glibc's malloc
        (None, {"LD_PRELOAD": "libjemalloc.so.2"}, True),  # the user's own allocator
    ],
)
def test_workers_are_reused_only_off_the_c_librarys_malloc(monkeypatch: pytest.MonkeyPatch, found, environ, reused):
    monkeypatch.setattr(allocator, "installed_tcmalloc", lambda: found)
    assert reuse_workers(environ) is reused


def test_a_process_on_the_c_librarys_malloc_names_it():
    assert malloc_of_a_process(LD_PRELOAD="") == "system"
