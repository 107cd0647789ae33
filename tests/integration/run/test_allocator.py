"""Debian's tcmalloc, as `make run` and `make test` install it: the loader finds it, so an embedded Ray's
trial workers preload it, and a process that preloads it says so (tests/unit/run/test_allocator.py holds
the choice itself, with the loader's answer given)."""

from __future__ import annotations

import pytest
from nerplat_processes import malloc_of_a_process

from nerplat.run.allocator import installed_tcmalloc, worker_preload

pytestmark = pytest.mark.slow  # needs a system package, libtcmalloc-minimal4, which `make test` installs


def test_tcmalloc_is_installed_where_the_tests_run():
    assert installed_tcmalloc() == "libtcmalloc_minimal.so.4"


def test_workers_preload_the_installed_tcmalloc():
    assert worker_preload({}) == {"LD_PRELOAD": "libtcmalloc_minimal.so.4"}


def test_a_process_that_preloads_tcmalloc_names_it():
    assert malloc_of_a_process(LD_PRELOAD="libtcmalloc_minimal.so.4") == "tcmalloc"
