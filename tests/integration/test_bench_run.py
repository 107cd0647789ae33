"""`nerplat bench run` on its smoke profile: a real 4-trial sweep on embedded Ray, figures as JSON."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_bench_run_prints_startup_slot_time_shares_and_ratio(tmp_path):
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
    shares = figures["slot_time"]
    assert set(shares) == {"setup", "train", "evaluate", "trial_other", "between_trials"}
    assert shares["train"] == pytest.approx(figures["train_share"])
    assert sum(shares.values()) == pytest.approx(1.0) and min(shares.values()) >= 0, shares
