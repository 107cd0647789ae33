"""The embedded Ray cluster stopped with the driver that started it, even when the driver is SIGKILLed.

Ray stops the processes `ray.init` starts itself (GCS, raylet, dashboard, monitors: Linux
fate-sharing) when the driver dies, but not the raylet's agents: after a SIGKILLed `nerplat run`
the DashboardAgent and RuntimeEnvAgent lived on for about a minute, each holding its ports and
memory, while they tried to report the raylet's death to a GCS that was gone (docs/performance.md).

`stop_with_this_process`, called once `ray.init` has started the cluster, starts this module, which
opens the driver's pidfd while the driver waits for it and hands the waiting to a child in a Unix
session of its own (init adopts it; a Ctrl-C or a closed terminal does not reach it). Once the
driver has ended, however it ended, or the cluster's GCS (`ray.shutdown` in a driver that goes on,
a test or a notebook), that child stops what is left of the cluster: the processes of the driver's
Unix session (every process Ray starts stays in it) with a file open in the cluster's session
folder (its logs: each of the GCS, raylet, agents, dashboard and workers holds one). SIGTERM, then
SIGKILL after `GRACE_S`. A cluster joined by address is never handed over, so never stopped; a
driver killed inside `ray.init` leaves what Ray leaves. Linux only (pidfd, /proc), as Ray's
fate-sharing is. The processes are found by their open files rather than an inherited environment
variable, because Ray's agents rename themselves (`ray::DashboardAgent`), which overwrites the
environment /proc shows.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

GRACE_S = 1.0  # SIGTERM to SIGKILL, as in Ray's own reaper: the agents, whose shutdown waits on the dead GCS, need SIGKILL
POLL_S = 0.2


def stop_with_this_process(session_dir: str) -> None:
    """The processes of the Ray cluster whose session folder is `session_dir` end when this process ends."""
    if not sys.platform.startswith("linux"):
        return
    # Returns once the reaper holds this process's pidfd; one that fails leaves the cluster to Ray, as before.
    subprocess.run(
        [sys.executable, "-m", "nerplat.run.ray_reaper", str(os.getpid()), session_dir],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, check=False,
    )  # fmt: skip


@dataclass(frozen=True)
class Cluster:
    """An embedded Ray cluster: its session folder, the Unix session of its driver, and the driver,
    which holds files of the folder open too but is never stopped here (it may live on after
    `ray.shutdown`)."""

    session_dir: str
    unix_session: int
    driver_pid: int


def reap_after(driver_pid: int, session_dir: str) -> None:
    """In the reaper: opens the driver's pidfd while the driver waits for this process (so the pid is
    still the driver's), then returns, leaving a child of its own to wait for the end of the driver
    or of the cluster's GCS and then stop what is left of the cluster."""
    driver = os.pidfd_open(driver_pid)
    unix_session = os.getsid(driver_pid)
    cluster = Cluster(session_dir, unix_session, driver_pid)
    watched = [driver, *_gcs_pidfds(cluster)]
    if os.fork() != 0:
        return  # the driver's wait ends; init adopts the child
    select.select(watched, [], [])  # a pidfd turns readable when its process ends
    stop_cluster(cluster)


def _gcs_pidfds(cluster: Cluster) -> list[int]:
    """The cluster's GCS server as a pidfd: its end is the cluster's (`ray.shutdown` in a driver that
    lives on), after which the reaper has nothing left to wait for."""
    found = []
    for pid in cluster_pids(cluster):
        try:
            with open(f"/proc/{pid}/comm") as command:
                if command.read().strip() == "gcs_server":
                    found.append(os.pidfd_open(pid))
        except OSError:  # ended meanwhile
            continue
    return found


def cluster_pids(cluster: Cluster) -> list[int]:
    """Processes of the driver's Unix session with a file open in the session folder, but the driver and this process."""
    folder = os.path.join(os.path.realpath(cluster.session_dir), "")  # /proc names files by their real paths
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (os.getpid(), cluster.driver_pid):
            continue
        try:
            if os.getsid(int(name)) == cluster.unix_session and any(path.startswith(folder) for path in _open_files(name)):
                found.append(int(name))
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return found


def _open_files(pid: str) -> list[str]:
    paths = []
    for descriptor in os.listdir(f"/proc/{pid}/fd"):
        try:
            paths.append(os.readlink(f"/proc/{pid}/fd/{descriptor}"))
        except OSError:  # closed meanwhile
            continue
    return paths


def stop_cluster(cluster: Cluster, grace_s: float = GRACE_S) -> None:
    """SIGTERM to every process of the cluster, then SIGKILL to those left after `grace_s`."""
    _signal(cluster_pids(cluster), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while cluster_pids(cluster) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    _signal(cluster_pids(cluster), signal.SIGKILL)


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            continue


if __name__ == "__main__":  # python -m nerplat.run.ray_reaper DRIVER_PID SESSION_DIR
    reap_after(int(sys.argv[1]), sys.argv[2])
