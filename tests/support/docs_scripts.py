"""Running the measurement scripts kept in docs/ the way their docstrings say to (from the repository
root), with a time limit stretched by the host's load."""

from __future__ import annotations

import os
import subprocess
import sys

from host_load import scaled
from repo_paths import REPO


def run_docs_script(
    script: str, *args: str, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """`docs/<script> args...` run to its end: a .py file by this interpreter, a .sh file by bash.

    `timeout` is seconds on the idle machine; the script's output is in the result (text)."""
    command = [sys.executable if script.endswith(".py") else "bash", str(REPO / "docs" / script), *args]
    environment = {key: value for key, value in os.environ.items() if key not in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS")}
    return subprocess.run(
        command, cwd=REPO, env={**environment, **(env or {})}, capture_output=True, text=True, timeout=scaled(timeout)
    )


def output_lines(result: subprocess.CompletedProcess) -> list[str]:
    """The script's stdout lines, after asserting it exited 0 (else the end of its output fails the test)."""
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout.strip().splitlines()
