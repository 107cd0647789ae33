"""docs/results/reproduce.sh splits a sequential design between sessions: a run stopped by --through-look
keeps its store beside the report, and `--continue` resumes it in a fresh scratch directory (the first one
gone, as on a fresh machine) without training the earlier look's replicates again.

Real nerplat, Ray and SQLite MLflow store on the tiny encoder: looks at 3 and 4 seeds of two arms, one
epoch each. The script takes the repository from its own location, so it runs from a copy beside the
test's spec (with this repository's venv), and writes its report there, never into docs/results."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl
import pytest
from host_load import scaled
from nerplat_processes import runs
from repo_paths import REPO

from nerplat.track import schema

pytestmark = pytest.mark.slow

# An equivalence margin no two tiny taggers meet: the claim stays open at look 1 and look 2 is left.
SPEC = """\
experiment: continued
dataset: conll2003
model: {encoder: tiny, max_length: 64}
train: {epochs: 1, batch_size: 16, lr: 1.0e-3, dev_subset: 20, threads: 1}
samplers: [{low_resource: {size: 20, partitions: 1}}]
methods:
  ce: {loss: ce}
  mom: {loss: mom, lambda: 0.2}
replicate:
  sequential: {max_seeds: 4, look_every: 1, spending: pocock}
claims:
  - {id: open, paper: "a test claim", source: "none: a test", method: mom, partner: ce, metric: micro_f1,
     kind: equivalent, margin: 1.0e-6}
"""


def repository(root: Path) -> Path:
    """A committed repository holding the script and the spec, running this repository's venv."""
    (root / "docs" / "results").mkdir(parents=True)
    shutil.copy(REPO / "docs" / "results" / "reproduce.sh", root / "docs" / "results")
    (root / "specs").mkdir()
    (root / "specs" / "continued.yaml").write_text(SPEC)
    (root / ".venv").symlink_to(REPO / ".venv")
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the spec"]
    for command in (["init", "-q"], ["add", "docs", "specs"], commit):
        subprocess.run(["git", *command], cwd=root, check=True)
    return root


@pytest.fixture
def scratch_folders() -> Iterator[Callable[[], Path]]:
    """Short folders under the system's temporary directory, removed after the test: the script's
    scratch directories go there, and Python's forkserver (Ray's dashboard) binds a Unix socket under
    TMPDIR, whose path may not exceed 107 bytes (a folder under pytest-xdist's tmp_path did)."""
    made: list[Path] = []

    def folder() -> Path:
        made.append(Path(tempfile.mkdtemp(prefix="nerplat-continue-")))
        return made[-1]

    yield folder
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def reproduce(repo: Path, scratch: Path, *args: str) -> Path:
    """Runs the script with its scratch directories made in `scratch`; returns the one it made."""
    environment = {key: value for key, value in os.environ.items() if key not in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS")}
    # Ray's sessions stay where they were: their socket paths under the test's folder exceed 107 bytes
    environment |= {"TMPDIR": str(scratch), "RAY_TMPDIR": os.environ.get("RAY_TMPDIR", tempfile.gettempdir())}
    result = subprocess.run(
        ["bash", str(repo / "docs" / "results" / "reproduce.sh"), "continued", "", *args], cwd=repo,
        env=environment, capture_output=True, text=True, timeout=scaled(900),
    )
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    (workdir,) = scratch.glob("nerplat-results-*")
    return workdir


def replicates(workdir: Path) -> dict[str, tuple[int, str]]:
    """Run id -> (start time, artifact location) of the experiment's replicate runs."""
    found = [run for run in runs(workdir, "continued") if run.data.tags[schema.KIND] == "replicate"]
    return {run.info.run_id: (run.info.start_time, run.info.artifact_uri) for run in found}


def test_a_run_stopped_after_look_1_is_continued_from_its_kept_store_in_a_fresh_directory(
    tmp_path: Path, scratch_folders: Callable[[], Path]
):
    repo = repository(tmp_path / "repo")
    report = repo / "docs" / "results" / "continued"
    first_scratch = scratch_folders()
    first = reproduce(repo, first_scratch, "", "--through-look", "1")
    assert (report / "store.tar.gz").is_file()
    assert "--continue --through-look 2" in (report / "RUN.md").read_text()
    look_1 = replicates(first)
    assert len(look_1) == 6  # 3 seeds x 2 arms
    shutil.rmtree(first_scratch)  # the next session's machine has none of it

    second = reproduce(repo, scratch_folders(), "--continue", "--through-look", "2")
    both = replicates(second)
    assert len(both) == 8 and {run: both[run][0] for run in look_1} == {run: start for run, (start, _) in look_1.items()}
    assert all(location.startswith(str(second)) for _, location in both.values())  # none under the gone directory
    assert not (report / "store.tar.gz").exists()  # look 2 is the design's last
    (row,) = pl.read_parquet(report / "verdicts.parquet").iter_rows(named=True)
    assert row["claim"] == "open" and row["n_units"] == 4
    console = (report / "console.txt").read_text()
    assert "stopped after look 1 by --through-look" in console and "look 2: replicates" in console
