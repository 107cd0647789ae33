"""`nerplat bench run` on its smoke profile: a real 5-trial sweep on embedded Ray cut into 2 blocks (the
floor of 5 repeats lowered by `bench.repeats.MIN_REPEATS_VARIABLE`), 2 in-process runs, figures as JSON."""

import json

import pytest
from nerplat_processes import finish, nerplat

from nerplat.bench.repeats import MIN_REPEATS_VARIABLE

pytestmark = pytest.mark.slow


def test_bench_run_prints_startup_slot_time_shares_and_ratio_with_their_spread(tmp_path):
    """A hang fails at 10 min showing its output."""
    flags = ["--profile", "smoke", "--repeats", "2", "--json"]
    code, out = finish(nerplat("bench", "run", *flags, workdir=tmp_path, env={MIN_REPEATS_VARIABLE: "2"}), timeout=600)
    assert code == 0, out
    figures, _ = json.JSONDecoder().raw_decode(out, out.index("\n{") + 1)  # stdout's JSON after stderr's progress
    assert figures["trials"] == 5 and figures["repeats"] == 2
    startup = figures["startup_s"]
    assert len(startup["repeats"]) == 5 and 0 < startup["min"] <= startup["median"] <= startup["max"]
    assert 0 < figures["train_share"] <= 1
    assert len(figures["ratio"]["repeats"]) == 2 and figures["ratio"]["min"] > 0
    assert len(figures["inprocess_tokens_per_s"]["repeats"]) == 2
    shares = figures["slot_time"]
    assert set(shares) == set(figures["block_slot_time"]) == {"setup", "train", "evaluate", "trial_other", "between_trials"}
    assert shares["train"] == pytest.approx(figures["train_share"])
    assert sum(shares.values()) == pytest.approx(1.0) and min(shares.values()) >= 0, shares
    for name, spread in figures["block_slot_time"].items():
        assert len(spread["repeats"]) == 2 and spread["min"] <= spread["median"] <= spread["max"], name
    # The blocks (of 3 and 2 trials) tile the sweep: each block's shares sum to one.
    blocks = figures["block_slot_time"].values()
    assert [sum(spread["repeats"][i] for spread in blocks) for i in range(2)] == pytest.approx([1.0] * 2)
