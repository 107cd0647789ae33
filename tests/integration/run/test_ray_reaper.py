"""A SIGKILLed `nerplat run` takes its embedded Ray cluster with it, the raylet's agents included (issue 62),
and a driver that shuts its cluster down and goes on keeps no reaper.

Ray's fate-sharing stops the GCS, raylet and dashboard with the driver; the DashboardAgent and the
RuntimeEnvAgent lived on for about a minute, trying to report the raylet's death to a GCS that was
gone. Real embedded Ray on 127.0.0.1, the tiny encoder, one trial at a time.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from embedded_ray import connect_embedded
from nerplat_processes import SPEC, nerplat, trial_midway, wait_for

pytestmark = pytest.mark.slow

# The agents outlived the driver by about 60 s without the reaper, which ends them within seconds:
# SIGKILLs need no CPU, so the deadline is not scaled by the host's load.
DEADLINE_S = 30


def session_pids(session: int) -> dict[int, str]:
    """Live processes of a session (the driver's: the Ray processes it started stay in it) -> their titles."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            found[int(entry.name)] = title
    return found


def reapers_of(pid: int) -> list[int]:
    wanted = f"nerplat.run.ray_reaper\0{pid}\0".encode()
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit() and wanted in _cmdline(e)]


def _cmdline(entry: Path) -> bytes:
    try:
        return (entry / "cmdline").read_bytes()
    except OSError:
        return b""


def test_a_sigkilled_driver_leaves_no_process_of_its_embedded_cluster(tmp_path: Path):
    spec = tmp_path / "reaped.yaml"
    text = SPEC.read_text().replace("${NERPLAT_TEST_EXPERIMENT:-tiny_run}", "reaped")
    spec.write_text(text.replace("max_concurrent: 2", "max_concurrent: 1").replace("epochs: 2", "epochs: 30"))
    driver = nerplat("run", str(spec), "--workdir", str(tmp_path), "--tune-only", "--no-analyze", workdir=tmp_path)
    try:
        wait_for(driver, tmp_path, "reaped", trial_midway, "no tuning trial reported an epoch")
        cluster = session_pids(driver.pid)
        assert any(title.startswith("ray::DashboardAgent") for title in cluster.values()), cluster
        assert any(title.startswith("ray::RuntimeEnvAgent") for title in cluster.values()), cluster
        assert reapers_of(driver.pid)
        os.kill(driver.pid, signal.SIGKILL)
        driver.communicate()
        deadline = time.monotonic() + DEADLINE_S
        while (session_pids(driver.pid) or reapers_of(driver.pid)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert session_pids(driver.pid) == {}, "processes of the killed driver's Ray cluster outlived it"
        assert reapers_of(driver.pid) == [], "the reaper did not end once its work was done"
    finally:
        for pid in [*session_pids(driver.pid), *reapers_of(driver.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_driver_that_shuts_its_cluster_down_and_goes_on_keeps_no_reaper_and_is_left_alone(monkeypatch):
    """A test or a notebook: `ray.shutdown` ends the cluster's GCS, and with it the reaper's wait; the
    driver, which held files of the session folder too, lives on (this test's process)."""
    import ray

    if ray.is_initialized():
        pytest.fail("a Ray session of an earlier test is still open: this test must start its own")
    try:
        connect_embedded(monkeypatch)
        assert reapers_of(os.getpid())
    finally:
        ray.shutdown()
    deadline = time.monotonic() + DEADLINE_S
    while reapers_of(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert reapers_of(os.getpid()) == []
