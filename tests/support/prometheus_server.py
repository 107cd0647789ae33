"""A Prometheus of a test's own (Debian's `prometheus`), on 127.0.0.1, stopped when the test ends."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from host_load import scaled

from nerplat.loopback import free_port

INSTALL_HINT = (
    "prometheus not found: install Debian's prometheus package "
    "(`apt-get update && apt-get install -y --no-install-recommends prometheus`); `make test` installs it"
)


def get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def get_json(url: str, timeout: float = 30.0) -> dict:
    return json.loads(get(url, timeout))


def binary(name: str = "prometheus") -> str:
    """Path of `prometheus` or `promtool`; the test fails saying how to install them when missing."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(INSTALL_HINT)
    return found


@contextmanager
def running_prometheus(config: dict, folder: Path) -> Iterator[str]:
    """Prometheus with `config` (prometheus.yml as data), its files in `folder`; yields its URL once ready."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    with open(folder / "prometheus.log", "w") as log:
        process = subprocess.Popen(
            [binary(), f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + scaled(60)
        while True:
            try:
                get(f"{url}/-/ready")
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, (folder / "prometheus.log").read_text()
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
