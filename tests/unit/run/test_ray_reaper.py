"""A SIGKILLed driver's cluster is stopped by its reaper, and nothing else is (issue 62)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from host_load import scaled

from nerplat.run import ray_session

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper needs pidfd and /proc")

# A process holding a file of the folder open, as each process of a Ray cluster holds its logs;
# `stubborn` ignores SIGTERM, as Ray's agents, whose shutdown waits on the dead GCS, do in effect.
HOLDER = """
import signal, sys, time
log = open(sys.argv[1], "a")
if sys.argv[2] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(600)
"""
# A driver: the processes of its cluster (its Unix session, a file open in the session folder: a
# GCS, named so, and an agent) and two that are not (one holds no such file, one holds it from a Unix
# session of its own). The driver holds a file of the folder too, as a Ray driver does.
DRIVER = f"""
import os, subprocess, sys, time
from nerplat.run.ray_reaper import stop_with_this_process

folder, gcs_server = sys.argv[1:3]
driver_log = open(folder + "/driver.log", "a")

def start(log, mode="plain", own_session=False, executable=sys.executable):
    command = [executable, "-c", {HOLDER!r}, log, mode]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=own_session)
    process.stdout.readline()
    return process

cluster = [start(folder + "/gcs_server.out", executable=gcs_server), start(folder + "/agent.log", "stubborn")]
others = [start(folder + "/../elsewhere.log"), start(folder + "/tail.log", own_session=True)]
stop_with_this_process(folder)
print(*(p.pid for p in cluster + others), flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    """Running, not a zombie left for a parent to reap."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def reapers_of(pid: int) -> list[int]:
    wanted = f"nerplat.run.ray_reaper\0{pid}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("ends", ["the driver, by SIGKILL", "the GCS, as at ray.shutdown"])
def test_what_is_left_of_the_cluster_is_stopped_when_its_driver_or_gcs_ends_and_nothing_else(ends: str, tmp_path: Path):
    folder = tmp_path / "session_2026-12-07_09-00-00_000000_1"
    folder.mkdir()
    gcs_server = tmp_path / "gcs_server"  # its process's name, as Ray's GCS server's
    gcs_server.symlink_to(sys.executable)
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(folder), str(gcs_server)], stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    pids: list[int] = []
    try:
        pids = [int(pid) for pid in driver.stdout.readline().split()]
        (gcs, agent), others = pids[:2], pids[2:]
        assert all(map(alive, pids)) and reapers_of(driver.pid)
        os.kill(driver.pid if ends.startswith("the driver") else gcs, signal.SIGKILL)
        deadline = time.monotonic() + scaled(30)
        while (alive(gcs) or alive(agent) or reapers_of(driver.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(gcs) and not alive(agent), "the cluster outlived the end of " + ends
        assert reapers_of(driver.pid) == [], "the reaper did not end once its work was done"
        assert all(map(alive, others))
        assert ends.startswith("the driver") or driver.poll() is None  # a driver that lives on is never stopped
    finally:
        driver.kill()
        for pid in pids + reapers_of(driver.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_only_the_embedded_cluster_is_handed_to_a_reaper(monkeypatch: pytest.MonkeyPatch):
    import ray

    def init(address: str, **options) -> SimpleNamespace:
        return SimpleNamespace(dashboard_url="127.0.0.1:8265", address_info={"session_dir": f"/tmp/ray/session_{address}"})

    reaped: list[str] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray_session, "stop_with_this_process", reaped.append)
    ray_session.connect_ray("192.0.2.1:6379", verbose=False)  # a running cluster: never stopped by nerplat
    ray_session.connect_ray(None, verbose=False)
    assert reaped == ["/tmp/ray/session_local"]
