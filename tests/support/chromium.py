"""Headless Chromium (Debian's `chromium` package): a page's DOM after its JavaScript ran, and a screenshot.

MLflow's UI is a React app: `--virtual-time-budget` lets its scripts and requests finish before the
DOM is dumped and the screenshot taken (without it the page may come out blank). Each call gets a fresh
profile, so nothing a page kept in local storage (MLflow keeps the view a browser chose there, and
nerplat's front writes its settings there: track/view.py) carries over to the next: each page is a
first visit. The default window is the 1400 pixels of issue 63.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from host_load import scaled

TRIES = 3
INSTALL_HINT = "chromium not found: install Debian's chromium package (`make chromium`, as root)"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def rendered_page(url: str, screenshot: Path, *, width: int = 1400, height: int = 1000, budget_ms: int = 20000) -> str:
    """The DOM of `url` once its scripts ran for `budget_ms` of virtual time; a PNG of the window goes to `screenshot`.

    On a loaded host headless Chromium now and then never ends a page (seen with MLflow's server
    alone, six pages at once at a load average of 25 on 2 cores, and once alone): a try that outlasts
    its limit is given up and the page opened again in a fresh profile, up to `TRIES` times.
    """
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail(INSTALL_HINT)
    for _ in range(TRIES):
        with tempfile.TemporaryDirectory(prefix="nerplat-chromium-") as profile:
            try:
                done = subprocess.run(
                    [
                        chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                        f"--virtual-time-budget={budget_ms}", "--dump-dom", f"--screenshot={screenshot}", url,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=scaled(60),  # about 20 s on the idle machine, stretched on a loaded host
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                continue
        assert done.returncode == 0, done.stderr[-3000:]
        assert screenshot.is_file(), done.stderr[-3000:]
        return done.stdout
    pytest.fail(f"headless Chromium ended no page of {url} in {TRIES} tries")
