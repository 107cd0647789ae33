"""Child servers on 127.0.0.1: the commands they run, and the process group stopped with them, even
when the process that started them is killed."""

import sys
from pathlib import Path

from host_load import scaled

from nerplat.local_servers import LocalOptunaDashboard, optuna_dashboard_hint


def test_the_optuna_dashboard_hint_is_a_command_to_copy():
    assert optuna_dashboard_hint("sqlite:////w/optuna.db") == "optuna-dashboard --host 127.0.0.1 --port 8080 --server wsgiref sqlite:////w/optuna.db"


def test_optuna_dashboard_runs_the_script_of_this_environment_on_loopback(tmp_path):
    dashboard = LocalOptunaDashboard(f"sqlite:///{tmp_path / 'optuna.db'}")
    command = dashboard.command()
    assert command[0] == str(Path(sys.executable).parent / "optuna-dashboard")  # a dependency of nerplat
    assert command[1:] == [
        "--host", "127.0.0.1", "--port", str(dashboard.port), "--server", "wsgiref", f"sqlite:///{tmp_path / 'optuna.db'}"
    ]


# A parent that starts a server whose process forks a worker (as `mlflow server` starts uvicorn),
# prints the server's process group and waits to be killed.
_PARENT = """
import sys, time
from nerplat.local_servers import LocalServer

class Forking(LocalServer):
    name = "forking server"

    def command(self):
        worker = "import time; time.sleep(600)"
        return [
            sys.executable,
            "-c",
            f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {worker!r}]); time.sleep(600)",
        ]

server = Forking()
server.launch()
print(server._process.pid, flush=True)
time.sleep(600)
"""


def _group_alive(group: int) -> bool:
    import os

    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _group_size(group: int) -> int:
    import os

    return sum(1 for pid in os.listdir("/proc") if pid.isdigit() and _pgid(int(pid)) == group)


def _pgid(pid: int) -> int | None:
    import os

    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def test_servers_and_their_workers_die_with_a_parent_killed_by_sigkill():
    """`kill -9` of `nerplat ui` leaves no server running (issue M5): the watchdog ends the group."""
    import os
    import signal
    import subprocess
    import time

    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    group = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + scaled(30)
        while _group_size(group) < 2:  # the server and its worker
            assert time.monotonic() < deadline, "the server did not start its worker"
            time.sleep(0.2)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + scaled(20)
        while _group_alive(group) and _group_size(group) > 0:
            assert time.monotonic() < deadline, "the server's group outlived its killed parent"
            time.sleep(0.2)
    finally:
        if _group_alive(group):
            os.killpg(group, signal.SIGKILL)


def test_a_clean_stop_releases_the_watchdog(tmp_path):
    """A stopped server's watchdog exits at once and kills nothing more."""

    class Sleeper(LocalOptunaDashboard):
        def command(self):
            return [sys.executable, "-c", "import time; time.sleep(600)"]

    server = Sleeper(f"sqlite:///{tmp_path / 'optuna.db'}")
    server.launch()
    watchdog = server._watchdog
    server.stop(grace=5)
    assert watchdog.wait(timeout=10) == 0
