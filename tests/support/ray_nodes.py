"""A real multi-node Ray cluster on 127.0.0.1 for tests: a head and worker nodes, each `ray start --block`.

Every node is its own process group, stopped by its PID (never `ray stop`, which stops every Ray
process on the machine). Token authentication is on, as Ray 2.60 has it by default: drivers and
joining nodes get `RAY_AUTH_MODE=token` and the token through `env()`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests
from host_load import scaled

from nerplat.loopback import free_port

BIN = Path(sys.executable).parent


class LocalRayCluster:
    def __init__(self, workdir: Path, head_cpus: int = 1):
        self.workdir = workdir
        # Ray puts Unix sockets in its temp dir, whose path must stay short (107-byte limit).
        self.temp_dir = Path(tempfile.mkdtemp(prefix="nr-", dir="/tmp"))
        self.token = secrets.token_hex(32)
        self.ports_handed_out: set[int] = set()
        self.gcs_port = self._free_port()
        self.dashboard_port = self._free_port()
        self.head_cpus = head_cpus
        self.nodes: dict[str, subprocess.Popen] = {}

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def env(self) -> dict[str, str]:
        return {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    def _free_port(self) -> int:
        """A free port this cluster has not handed out before: a probe's port is free again once the
        probe closes, so two probes can return the same port, and a node given it twice refuses to start."""
        while (port := free_port()) in self.ports_handed_out:
            pass
        self.ports_handed_out.add(port)
        return port

    def _ports(self) -> list[str]:
        port = self._free_port
        return [
            f"--node-manager-port={port()}", f"--object-manager-port={port()}",
            f"--dashboard-agent-listen-port={port()}", f"--dashboard-agent-grpc-port={port()}",
            f"--runtime-env-agent-port={port()}", f"--metrics-export-port={port()}",
            "--min-worker-port=0", "--max-worker-port=0",
        ]  # fmt: skip

    def _start(self, name: str, arguments: list[str]) -> None:
        log = (self.workdir / f"ray-{name}.log").open("w")
        command = [str(BIN / "ray"), "start", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1", *arguments]
        self.nodes[name] = subprocess.Popen(
            command, cwd=self.workdir, env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def start_head(self) -> None:
        self._start(
            "head",
            [
                "--head", f"--port={self.gcs_port}", f"--num-cpus={self.head_cpus}", "--node-name=head",
                "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard_port}",
                f"--ray-client-server-port={self._free_port()}", f"--temp-dir={self.temp_dir}", *self._ports(),
            ],
        )  # fmt: skip
        self.wait_for_nodes(1)

    def add_worker(self, name: str, cpus: int, resources: dict[str, float]) -> None:
        import json

        self._start(
            name,
            [f"--address={self.address}", f"--num-cpus={cpus}", f"--node-name={name}",
             f"--resources={json.dumps(resources)}", *self._ports()],
        )

    def alive_nodes(self) -> int:
        """Alive nodes as the dashboard's state API counts them (no driver: `ray.init` sometimes hangs while a
        raylet registers)."""
        try:
            reply = requests.get(
                f"{self.dashboard_url}/api/v0/nodes", headers={"Authorization": f"Bearer {self.token}"}, timeout=10
            )
        except (requests.ConnectionError, requests.Timeout):
            return 0
        if reply.status_code != 200:
            return 0
        return sum(node["state"] == "ALIVE" for node in reply.json()["data"]["result"]["result"])

    def wait_for_nodes(self, count: int, timeout: float = 180) -> None:
        timeout = scaled(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, node in self.nodes.items():
                if node.poll() is not None:
                    log = (self.workdir / f"ray-{name}.log").read_text()[-3000:]
                    raise RuntimeError(f"ray node {name} exited with code {node.returncode}:\n{log}")
            if self.alive_nodes() >= count:
                return
            time.sleep(1)
        raise RuntimeError(f"{count} Ray nodes not up after {timeout:.0f} s")

    def stop_node(self, name: str) -> None:
        node = self.nodes.pop(name)
        node.send_signal(signal.SIGTERM)  # `ray start --block` stops the processes it started
        try:
            node.wait(timeout=60)
        except subprocess.TimeoutExpired:
            node.kill()
        try:
            os.killpg(node.pid, signal.SIGKILL)  # anything of ours left in the group we created
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        for name in [n for n in self.nodes if n != "head"] + [n for n in self.nodes if n == "head"]:
            self.stop_node(name)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


@contextmanager
def three_node_cluster(workdir: Path) -> Iterator[LocalRayCluster]:
    """A head (1 CPU) and two workers (1 CPU and one `fake_gpu` each) on 127.0.0.1, stopped after."""
    nodes = LocalRayCluster(workdir, head_cpus=1)
    try:
        nodes.start_head()
        # One at a time: two raylets registering at the same instant sometimes time out here.
        nodes.add_worker("worker-1", cpus=1, resources={"fake_gpu": 1})
        nodes.wait_for_nodes(2)
        nodes.add_worker("worker-2", cpus=1, resources={"fake_gpu": 1})
        nodes.wait_for_nodes(3)
        yield nodes
    finally:
        nodes.stop()
