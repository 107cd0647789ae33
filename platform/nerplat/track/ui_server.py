"""A local `mlflow server` child process on 127.0.0.1, and the URLs people should open in it.

The runs table of an experiment is `#/experiments/<id>/runs`; the plain experiment URL opens
MLflow 3's GenAI overview instead. The server becomes healthy after 7-18 s here, so `start`
waits on `/health`. It is started in its own process group and stopped with that group, because
it forks uvicorn workers that would otherwise outlive it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from nerplat.errors import UserInputError
from nerplat.suggest import closest


def runs_table_url(server_url: str, experiment_id: str) -> str:
    return f"{server_url.rstrip('/')}/#/experiments/{experiment_id}/runs"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def is_healthy(server_url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"{server_url}/health", timeout=timeout) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


class LocalMlflowServer:
    """`mlflow server` for one backend store, bound to 127.0.0.1; use as a context manager.

    Parameters
    ----------
    backend_store_uri : the store to serve, e.g. `sqlite:////abs/path/mlflow.db`.
    artifacts_destination : where proxied artifact uploads go (`--artifacts-destination`); runs
        of experiments created with a local artifact location are read from there directly.
    port : 0 picks a free port.
    workers : uvicorn workers; one serves a UI fine while training shares 2 CPU cores, a store
        under many writers wants one per core (`nerplat bench tracking`).
    """

    def __init__(self, backend_store_uri: str, artifacts_destination: Path, port: int = 0, workers: int = 1):
        if port and port_in_use(port):
            raise UserInputError(f"port {port} on 127.0.0.1 is in use: pick another with --port, or omit it")
        self.backend_store_uri = backend_store_uri
        self.artifacts_destination = Path(artifacts_destination)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self._process: subprocess.Popen | None = None
        self._log = None

    def start(self, timeout: float = 90.0) -> str:
        """Starts the server and returns its URL once `/health` answers."""
        self.artifacts_destination.mkdir(parents=True, exist_ok=True)
        self._log = tempfile.TemporaryFile(mode="w+", prefix="nerplat-mlflow-server-")
        command = [
            sys.executable, "-m", "mlflow", "server",
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--workers", str(self.workers),
            "--backend-store-uri", self.backend_store_uri,
            "--artifacts-destination", str(self.artifacts_destination),
        ]  # fmt: skip
        # MLflow 3 also starts a job runner and 7 consumers for GenAI scorers by default; nerplat
        # uses none, and on 2 busy cores they took the start from 7 s to 46 s.
        environment = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        self._process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                problem = f"mlflow server exited with code {self._process.returncode}"
                break
            if is_healthy(self.url):
                return self.url
            time.sleep(0.5)
        else:
            problem = f"mlflow server was not healthy at {self.url} after {timeout:.0f} s"
        log = self._log_tail()
        self.stop()
        raise RuntimeError(f"{problem}; its last output:\n{log}")

    def wait(self) -> int:
        """Blocks until the server exits (Ctrl-C raises KeyboardInterrupt in the caller)."""
        return self._process.wait()

    def stop(self, grace: float = 10.0) -> None:
        """Stops the server and its workers (its whole process group)."""
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
        if self._log is not None:
            self._log.close()
            self._log = None

    def _log_tail(self, lines: int = 20) -> str:
        self._log.flush()
        self._log.seek(0)
        return "\n".join(self._log.read().splitlines()[-lines:])

    def __enter__(self) -> LocalMlflowServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


def experiments_to_show(tracking_uri: str, name: str | None) -> list[tuple[str, str]]:
    """(name, id) of the experiment called `name`, or of every nerplat experiment in the store."""
    from mlflow import MlflowClient

    from nerplat.track.schema import EXPERIMENT

    client = MlflowClient(tracking_uri=tracking_uri)
    if name is not None:
        experiment = client.get_experiment_by_name(name)
        if experiment is None or experiment.lifecycle_stage != "active":
            known = [e.name for e in client.search_experiments()]
            close = closest(name, known)
            hint = f"; did you mean {close!r}?" if close is not None else f"; it has {sorted(known)}"
            raise UserInputError(f"no experiment {name!r} in {tracking_uri}{hint}")
        return [(experiment.name, experiment.experiment_id)]
    found = [(e.name, e.experiment_id) for e in client.search_experiments() if EXPERIMENT in e.tags]
    return sorted(found)
