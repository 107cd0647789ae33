"""`nerplat bench run` on its smoke profile: a real 4-trial sweep on embedded Ray, figures as JSON."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_bench_run_prints_startup_train_share_and_ratio(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "nerplat.cli", "bench", "run", "--profile", "smoke", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout)
    assert figures["trials"] == 4
    assert 0 < figures["startup_s"] <= figures["startup_max_s"]
    assert 0 < figures["train_share"] <= 1
    assert figures["ratio"] > 0
