"""`nerplat bench run` on its smoke profile: a real 5-trial sweep on embedded Ray, figures as JSON."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_bench_run_prints_startup_slot_time_shares_and_ratio_with_their_spread(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "nerplat.cli", "bench", "run", "--profile", "smoke", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout)
    assert figures["trials"] == 5 and figures["repeats"] == 5
    startup = figures["startup_s"]
    assert len(startup["repeats"]) == 5 and 0 < startup["min"] <= startup["median"] <= startup["max"]
    assert 0 < figures["train_share"] <= 1
    assert len(figures["ratio"]["repeats"]) == 5 and figures["ratio"]["min"] > 0
    assert len(figures["inprocess_tokens_per_s"]["repeats"]) == 5
    shares = figures["slot_time"]
    assert set(shares) == set(figures["block_slot_time"]) == {"setup", "train", "evaluate", "trial_other", "between_trials"}
    assert shares["train"] == pytest.approx(figures["train_share"])
    assert sum(shares.values()) == pytest.approx(1.0) and min(shares.values()) >= 0, shares
    for name, spread in figures["block_slot_time"].items():
        assert len(spread["repeats"]) == 5 and spread["min"] <= spread["median"] <= spread["max"], name
    # The blocks tile the sweep: each block's shares sum to one.
    assert [sum(spread["repeats"][i] for spread in figures["block_slot_time"].values()) for i in range(5)] == pytest.approx([1.0] * 5)
