"""Running the `nerplat` CLI (and nerplat code) in subprocesses, and reading what its runs left in MLflow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from host_load import scaled

SPEC = Path(__file__).parents[1] / "integration" / "specs" / "tiny_run.yaml"


def nerplat(*args: str, workdir: Path, env: dict[str, str] | None = None, **popen) -> subprocess.Popen:
    environment = {**os.environ, **(env or {})}
    # pytest-xdist's workers set COLUMNS=80 and LINES=24; the driver's output is read as a log's
    # (150 columns), as under a plain `pytest`, unless the test's `env` sets COLUMNS itself
    for variable in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS", "COLUMNS", "LINES"):
        environment.pop(variable, None)
    environment.update(env or {})
    return subprocess.Popen(
        [sys.executable, "-m", "nerplat.cli", *args],
        cwd=workdir,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # so a test can kill the driver with the Ray processes it started
        **popen,
    )


def malloc_of_a_process(**env: str) -> str:
    """The allocator a fresh Python process runs on (run/allocator.py's `process_malloc`), with `env` added."""
    show = "from nerplat.run.allocator import process_malloc; print(process_malloc())"
    environment = {**os.environ, **env}
    completed = subprocess.run([sys.executable, "-c", show], env=environment, capture_output=True, text=True, check=True)
    return completed.stdout.strip()


def finish(process: subprocess.Popen, timeout: float = 600) -> tuple[int, str]:
    """Exit code and output; a command still running after `timeout` (as on the idle machine, `scaled`
    by the host's load) is killed with the processes it started (its session), and the test fails
    with the end of what it printed, so a hang is seen."""
    timeout = scaled(timeout)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        raise AssertionError(
            f"`nerplat {' '.join(process.args[3:])}` still ran after {timeout:.0f} s; it printed:\n{output[-4000:]}"
        ) from None
    return process.returncode, output


def runs(workdir: Path, experiment: str) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no MLflow experiment {experiment}"
    return client.search_runs([found.experiment_id], max_results=1000)


def runs_so_far(workdir: Path, experiment: str) -> list:
    """Runs of an experiment a live driver is writing.

    Nothing is read before the driver has logged its first artifact: a client opening the SQLite
    file while the driver still creates MLflow's tables would run the same migration and break it.
    """
    if not (workdir / "mlartifacts").exists():
        return []
    try:
        return runs(workdir, experiment)
    except Exception:  # the experiment may not be there yet
        return []


def trial_worker_pids(driver: subprocess.Popen) -> list[int]:
    """Ray actors running a Tune function trainable (their process title names it) of this driver only.

    The driver starts in a session of its own (`nerplat` above) and the Ray processes it starts stay
    in it, so other Ray clusters on the machine (another test run, a user's experiment) are left alone.
    """
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            session = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[3])
        except (OSError, IndexError, ValueError):
            continue
        if session == driver.pid and title.startswith("ray::") and ("ImplicitFunc" in title or "nerplat_trial" in title):
            pids.append(int(entry.name))
    return pids


def wait_for(
    driver: subprocess.Popen, workdir: Path, experiment: str, found: Callable[[list], bool], what: str, seconds: float = 300
) -> None:
    """Polls the runs of a live driver until `found(runs)`; fails the test if the driver ends first.

    Every 0.2 s: a tiny-encoder epoch takes a fraction of a second, and a moment polled once a
    second (a trial midway) was missed altogether under load.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.2)
        assert driver.poll() is None, driver.communicate()[0]
        if found(runs_so_far(workdir, experiment)):
            return
    raise AssertionError(f"{what} within {seconds:.0f} s")


def trial_midway(all_runs: list) -> bool:
    """A tuning trial that reported an epoch and has epochs to go (no status yet)."""
    from nerplat.track import schema

    return any(
        run.data.tags.get(schema.KIND) == "trial" and "dev_micro_f1" in run.data.metrics and schema.STATUS not in run.data.tags
        for run in all_runs
    )


def kill_a_trial_midway(driver: subprocess.Popen, workdir: Path, experiment: str) -> list[int]:
    """SIGKILLs the trial workers of `driver` while a tuning trial trains; returns their pids.

    Run it on a spec with one trial at a time: Tune retries a trial whose worker died while the
    trial ran, but fails for good one whose worker was still starting (or being handed over to the
    next trial), so killing every worker of two concurrent trials made the outcome a race.
    """
    wait_for(driver, workdir, experiment, trial_midway, "no tuning trial reported an epoch")
    killed = trial_worker_pids(driver)
    assert killed, "no trial worker to kill"
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    return killed
