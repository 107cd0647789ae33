"""The embedded Ray cluster stopped with the driver that started it, even when the driver is SIGKILLed.

Ray stops the processes `ray.init` starts itself (GCS, raylet, dashboard, monitors: Linux
fate-sharing) when the driver dies, but not the raylet's agents: after a SIGKILLed `nerplat run`
the DashboardAgent and RuntimeEnvAgent lived on for about a minute, each holding its ports and
memory, while they tried to report the raylet's death to a GCS that was gone (docs/performance.md).

`stop_with_this_process`, called once `ray.init` has started the cluster, starts this module, which
opens the driver's pidfd while the driver waits for it and hands the waiting to a child in a Unix
session of its own (init adopts it; a Ctrl-C or a closed terminal does not reach it). Once the
driver has ended, however it ended, that child stops the cluster's processes: those of the driver's
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


def reap_after(driver_pid: int, session_dir: str) -> None:
    """In the reaper: opens the driver's pidfd while the driver waits for this process (so the pid is
    still the driver's), then returns, leaving a child of its own to wait for the driver's end and
    stop the cluster's processes."""
    driver = os.pidfd_open(driver_pid)
    unix_session = os.getsid(driver_pid)
    if os.fork() != 0:
        return  # the driver's wait ends; init adopts the child
    select.select([driver], [], [])  # a pidfd turns readable when its process ends
    stop_cluster(session_dir, unix_session)


def cluster_pids(session_dir: str, unix_session: int) -> list[int]:
    """Processes of `unix_session` with a file open under `session_dir` (this process excepted)."""
    folder = os.path.join(os.path.realpath(session_dir), "")  # /proc names files by their real paths
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            if os.getsid(int(name)) == unix_session and any(path.startswith(folder) for path in _open_files(name)):
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


def stop_cluster(session_dir: str, unix_session: int, grace_s: float = GRACE_S) -> None:
    """SIGTERM to every process of the cluster, then SIGKILL to those left after `grace_s`."""
    _signal(cluster_pids(session_dir, unix_session), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while cluster_pids(session_dir, unix_session) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    _signal(cluster_pids(session_dir, unix_session), signal.SIGKILL)


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            continue


if __name__ == "__main__":  # python -m nerplat.run.ray_reaper DRIVER_PID SESSION_DIR
    reap_after(int(sys.argv[1]), sys.argv[2])
