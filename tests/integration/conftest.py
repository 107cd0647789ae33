"""Finished `nerplat run`s shared by the tests that only read what they left, or change a copy of it.

A tiny run takes minutes here; the tests that read one share it. Under pytest-xdist each worker is
its own process, so each shared run is made once per session by whichever worker asks first, under
a file lock in the session's temporary folder, and the others wait for it and read the same store.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from nerplat_processes import SPEC, finish, nerplat


@dataclass(frozen=True)
class FinishedRun:
    workdir: Path  # holds mlflow.db, mlartifacts/ and reports/
    code: int
    output: str


@pytest.fixture(scope="session")
def run_once(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., FinishedRun]:
    """`run_once(name, spec, *options)`: `nerplat run spec --workdir <name> options`, run to the end by
    the first worker of the session that asks for `name`; every later call returns that run."""
    base = tmp_path_factory.getbasetemp()
    # the folder all workers of this session share (an xdist worker's own is inside it)
    session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base

    def finished(name: str, spec: Path, *options: str) -> FinishedRun:
        workdir = session / name
        with open(session / f"{name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (workdir / "exit-code").exists():
                workdir.mkdir(exist_ok=True)
                code, output = finish(nerplat("run", str(spec), "--workdir", str(workdir), *options, workdir=workdir))
                (workdir / "output.txt").write_text(output)
                (workdir / "exit-code").write_text(str(code))
        return FinishedRun(workdir, int((workdir / "exit-code").read_text()), (workdir / "output.txt").read_text())

    return finished


@pytest.fixture(scope="session")
def finished_tiny_run(run_once: Callable[..., FinishedRun]) -> FinishedRun:
    """`nerplat run tests/integration/specs/tiny_run.yaml` in a folder of its own, run to the end."""
    return run_once("finished-tiny-run", SPEC, "--progress-every", "2")


@pytest.fixture
def tiny_run_copy(finished_tiny_run: FinishedRun, tmp_path: Path) -> Path:
    """A working directory holding a copy of `finished_tiny_run`'s stores, for a test that runs its
    experiment again: a copy takes a second where the run takes minutes, and the shared run stays
    as the tests that read it expect."""
    assert finished_tiny_run.code == 0, finished_tiny_run.output
    copy_stores(finished_tiny_run.workdir, tmp_path)
    return tmp_path


@pytest.fixture
def stores_copier() -> Callable[[Path, Path], None]:
    """`copy_stores`, for a test that runs a copy of another shared run than `finished_tiny_run`."""
    return copy_stores


def copy_stores(workdir: Path, folder: Path) -> None:
    """Copies what `nerplat run` left in `workdir` into `folder` with the absolute paths MLflow
    keeps (artifact locations, model sources, `MLmodel` files) moved along, so that nothing run in
    the copy writes to `workdir`. The SQLite stores are copied by SQLite's backup, whole even while
    another test reads them; Tune's folder (.nerplat/) is left out: a resume starts it anew."""
    shutil.copytree(workdir, folder, ignore=shutil.ignore_patterns(".nerplat", "*.db"), dirs_exist_ok=True)
    for database in workdir.glob("*.db"):
        with closing(sqlite3.connect(database)) as source, closing(sqlite3.connect(folder / database.name)) as copy:
            source.backup(copy)
    old, new = str(workdir.resolve()), str(folder.resolve())  # as the driver records them
    with closing(sqlite3.connect(folder / "mlflow.db")) as store:
        tables = [name for (name,) in store.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for column in [row[1] for row in store.execute(f"PRAGMA table_info('{table}')")]:
                store.execute(
                    f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) '
                    f'WHERE typeof("{column}") = \'text\' AND instr("{column}", ?) > 0',
                    (old, new, old),
                )
        store.commit()
    for model in folder.glob("mlartifacts/**/MLmodel"):
        model.write_text(model.read_text().replace(old, new))
