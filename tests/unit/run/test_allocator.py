"""Which malloc an embedded Ray's trial workers get, and how a process tells which one it runs on."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nerplat.run import allocator
from nerplat.run.allocator import installed_tcmalloc, worker_preload

SHOW_MALLOC = "from nerplat.run.allocator import process_malloc; print(process_malloc())"


def malloc_of_a_process(**env: str) -> str:
    import os

    completed = subprocess.run(
        [sys.executable, "-c", SHOW_MALLOC], env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    return completed.stdout.strip()


def test_tcmalloc_is_installed_where_the_tests_run():
    # `make test` and `make test-fast` install Debian's libtcmalloc-minimal4, as `make run` does: the runs below rely on it.
    assert installed_tcmalloc() == "libtcmalloc_minimal.so.4"


def test_workers_preload_tcmalloc_unless_the_user_chose_a_preload():
    assert worker_preload({}) == {"LD_PRELOAD": "libtcmalloc_minimal.so.4"}
    assert worker_preload({"LD_PRELOAD": ""}) == {}  # an empty LD_PRELOAD keeps glibc's malloc
    assert worker_preload({"LD_PRELOAD": "libjemalloc.so.2"}) == {}  # inherited by the workers as it is


def test_without_tcmalloc_workers_keep_the_system_malloc(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(allocator, "installed_tcmalloc", lambda: None)
    assert worker_preload({}) == {}


@pytest.mark.parametrize(
    ("env", "expected"), [({"LD_PRELOAD": ""}, "system"), ({"LD_PRELOAD": "libtcmalloc_minimal.so.4"}, "tcmalloc")]
)
def test_a_process_names_the_malloc_it_runs_on(env: dict[str, str], expected: str):
    assert malloc_of_a_process(**env) == expected
