"""One finished `nerplat run` of the tiny spec, shared by the tests that only read what it left.

A tiny run takes minutes here; the tests that read one share it. Under pytest-xdist each worker is
its own process, so the run is made once per session by whichever worker asks first, under a
file lock in the session's temporary folder, and the others wait for it and read the same store.
"""

from __future__ import annotations

import fcntl
from dataclasses import dataclass
from pathlib import Path

import pytest
from nerplat_processes import SPEC, finish, nerplat


@dataclass(frozen=True)
class FinishedRun:
    workdir: Path  # holds mlflow.db, mlartifacts/ and reports/
    code: int
    output: str


@pytest.fixture(scope="session")
def finished_tiny_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> FinishedRun:
    """`nerplat run tests/integration/specs/tiny_run.yaml` in a folder of its own, run to the end."""
    base = tmp_path_factory.getbasetemp()
    session = base if worker_id == "master" else base.parent  # the folder all workers of this session share
    workdir = session / "finished-tiny-run"
    with open(session / "finished-tiny-run.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (workdir / "exit-code").exists():
            workdir.mkdir(exist_ok=True)
            code, output = finish(nerplat("run", str(SPEC), "--workdir", str(workdir), "--progress-every", "2", workdir=workdir))
            (workdir / "output.txt").write_text(output)
            (workdir / "exit-code").write_text(str(code))
    return FinishedRun(workdir, int((workdir / "exit-code").read_text()), (workdir / "output.txt").read_text())
