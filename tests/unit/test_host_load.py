"""Time limits of tests scale with the host's load (tests/support/host_load.py)."""

import os

import pytest
from host_load import scaled, slowdown


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})


def test_an_idle_host_keeps_the_limit_as_written(two_cores, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert slowdown() == 1.0 and scaled(30) == 30


def test_a_loaded_host_stretches_the_limit_by_runnable_processes_per_core(two_cores, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (12.0, 1.0, 1.0))
    assert slowdown() == 6.0 and scaled(30) == 180
