"""Servers nerplat starts as child processes on 127.0.0.1, and stops with everything they started.

`nerplat ui` starts `mlflow server` for the runs, the front a browser opens it through
(`track/ui_front.py`: it gives the browser nerplat's settings of MLflow's UI, `track/view.py`; the
URL to open is `runs_table_url`) and `optuna-dashboard` for the arms' Optuna studies
(track/studies.py), a study being `/dashboard/studies/<id>`; `nerplat bench tracking` starts
`mlflow server` on PostgreSQL. The MLflow server takes several seconds to become healthy,
optuna-dashboard fewer (docs/performance.md, "Figures behind the code's choices"), so both are
launched first and then waited for. Each runs in its own process group and is stopped with that
group, because servers fork workers that would otherwise outlive them (`mlflow server` starts
uvicorn as a child). A watchdog process per server ends the group when the process that started it
dies in any way, SIGKILL included: the watchdog waits for its stdin pipe to close, which the kernel
does when the parent ends, and is told "stopped" by a clean `stop`. Which experiments to show is the
store's bookkeeping (`track/experiment_reader.py`'s `experiments_to_show`).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from nerplat.errors import UserInputError
from nerplat.loopback import answers, free_port, port_in_use

OPTUNA_DASHBOARD = "optuna-dashboard"
# The environment of `mlflow server`: MLflow 3 also starts a job runner and 7 consumers for GenAI
# scorers by default, which nerplat uses none of and which made the start several times longer on a
# busy machine (docs/performance.md, "Figures behind the code's choices"); nor does nerplat use the
# AI gateway, whose entry the UI then leaves out.
MLFLOW_SERVER_SETTINGS = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_ENABLE_AI_GATEWAY": "false"}
STOP_GRACE = 10.0  # seconds a server's group gets between SIGTERM and SIGKILL

# What the watchdog runs (`python -I -S -c`, so it starts in milliseconds and imports nothing of ours).
_WATCHDOG = """
import os, signal, sys, time
group, grace = int(sys.argv[1]), float(sys.argv[2])
signal.signal(signal.SIGINT, signal.SIG_IGN)
if sys.stdin.buffer.read() != b"stopped":
    try:
        os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            time.sleep(0.2)
            os.killpg(group, 0)
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass
"""


class LocalServer:
    """A server child process bound to 127.0.0.1, healthy once `health_path` answers; use as a
    context manager, or `launch` several and then `wait_until_healthy` each.

    Subclasses give `name`, `health_path` and `command()`.
    """

    name = "server"
    health_path = "/"

    def __init__(self, port: int = 0):
        if port and port_in_use(port):
            raise UserInputError(f"port {port} on 127.0.0.1 is in use: pick another with --port, or omit it")
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen | None = None
        self._watchdog: subprocess.Popen | None = None
        self._log = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def launch(self) -> None:
        self._log = tempfile.TemporaryFile(mode="w+", prefix=f"nerplat-{self.name}-")
        self._process = subprocess.Popen(
            self.command(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.environment(),
            start_new_session=True,
        )
        self._watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(self._process.pid), str(STOP_GRACE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in the terminal reaches `nerplat ui`, which stops the servers itself
        )

    def wait_until_healthy(self, timeout: float = 90.0) -> str:
        """Its URL once `health_path` answers; RuntimeError with its last output when it exits or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                problem = f"{self.name} exited with code {self._process.returncode}"
                break
            if answers(f"{self.url}{self.health_path}"):
                return self.url
            time.sleep(0.5)
        else:
            problem = f"{self.name} was not healthy at {self.url} after {timeout:.0f} s"
        log = self._log_tail()
        self.stop()
        raise RuntimeError(f"{problem}; its last output:\n{log}")

    def start(self, timeout: float = 90.0) -> str:
        """Starts the server and returns its URL once it is healthy."""
        self.launch()
        return self.wait_until_healthy(timeout)

    def exit_code(self) -> int | None:
        """None while it runs."""
        return self._process.poll()

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Stops the server and its workers (its whole process group), then releases its watchdog."""
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                _signal_group(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    pass
            _signal_group(process.pid, signal.SIGKILL)  # workers that outlived the server, if any
            process.wait()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.communicate(b"stopped")
        if self._log is not None:
            self._log.close()
            self._log = None

    def _log_tail(self, lines: int = 20) -> str:
        self._log.flush()
        self._log.seek(0)
        return "\n".join(self._log.read().splitlines()[-lines:])

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class LocalMlflowServer(LocalServer):
    """`mlflow server` for one backend store.

    Parameters
    ----------
    backend_store_uri : the store to serve, e.g. `sqlite:////abs/path/mlflow.db`.
    artifacts_destination : where proxied artifact uploads go (`--artifacts-destination`); runs
        of experiments created with a local artifact location are read from there directly.
    port : 0 picks a free port.
    workers : uvicorn workers; one serves a UI fine while training shares 2 CPU cores, a store
        under many writers wants one per core (`nerplat bench tracking`).
    """

    name = "mlflow server"
    health_path = "/health"

    def __init__(self, backend_store_uri: str, artifacts_destination: Path, port: int = 0, workers: int = 1):
        super().__init__(port)
        self.workers = workers
        self.backend_store_uri = backend_store_uri
        self.artifacts_destination = Path(artifacts_destination)

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "mlflow", "server",
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--workers", str(self.workers),
            "--backend-store-uri", self.backend_store_uri,
            "--artifacts-destination", str(self.artifacts_destination),
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        return {**os.environ, **MLFLOW_SERVER_SETTINGS}

    def launch(self) -> None:
        self.artifacts_destination.mkdir(parents=True, exist_ok=True)
        super().launch()


class LocalUiFront(LocalServer):
    """The front of MLflow's UI (`track/ui_front.py`) for the MLflow server at `upstream_url`;
    healthy once the server answers through it."""

    name = "MLflow UI front"
    health_path = "/health"

    def __init__(self, upstream_url: str, port: int = 0):
        super().__init__(port)
        self.upstream_url = upstream_url

    def command(self) -> list[str]:
        return [sys.executable, "-m", "nerplat.track.ui_front", self.upstream_url, str(self.port)]


class LocalOptunaDashboard(LocalServer):
    """`optuna-dashboard` for one Optuna storage (its URL without credentials: libpq reads them
    from the environment, track/studies.py)."""

    name = OPTUNA_DASHBOARD
    health_path = "/api/studies"

    def __init__(self, storage_url: str, port: int = 0):
        super().__init__(port)
        self.storage_url = storage_url

    def command(self) -> list[str]:
        return optuna_dashboard_command(self.storage_url, self.port, executable=optuna_dashboard_executable() or OPTUNA_DASHBOARD)

    def studies(self) -> list[tuple[str, int]]:
        """(name, id) of every study it shows, through its own API."""
        with urllib.request.urlopen(f"{self.url}/api/studies", timeout=10) as answer:
            found = json.load(answer)["study_summaries"]
        return sorted((study["study_name"], study["study_id"]) for study in found)


def optuna_dashboard_command(storage_url: str, port: int, executable: str = OPTUNA_DASHBOARD) -> list[str]:
    # wsgiref (threaded) rather than gunicorn's workers: one person looks at it, on shared cores.
    return [executable, "--host", "127.0.0.1", "--port", str(port), "--server", "wsgiref", storage_url]


def optuna_dashboard_hint(storage_url: str) -> str:
    """The command that serves the studies, for a user to run when `nerplat ui` cannot."""
    return shlex.join(optuna_dashboard_command(storage_url, 8080))


def optuna_dashboard_executable() -> str | None:
    """The `optuna-dashboard` script of this Python's environment (else on PATH), or None."""
    beside = Path(sys.executable).parent / OPTUNA_DASHBOARD
    return str(beside) if beside.is_file() else shutil.which(OPTUNA_DASHBOARD)


def study_url(dashboard_url: str, study_id: int) -> str:
    return f"{dashboard_url.rstrip('/')}/dashboard/studies/{study_id}"


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass

