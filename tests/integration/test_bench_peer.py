"""`nerplat bench peer` shrunk to 2 trials x 1 epoch of the tiny encoder, 2 repeats (the floor of 5 lowered
by `bench.repeats.MIN_REPEATS_VARIABLE`: each repeat starts Ray anew): both sides run in turns, each in a
process of its own (nerplat on embedded Ray, the Trainer in one process), and the table holds their medians
with spread. Never a timing."""

import re

import pytest
from nerplat_processes import finish, nerplat

from nerplat.bench.repeats import MIN_REPEATS_VARIABLE
from nerplat.config.experiment import TUNE_SEED

pytestmark = pytest.mark.slow


def test_bench_peer_prints_medians_with_spread_of_wall_per_trial_best_dev_and_ratio_for_both_sides(tmp_path):
    flags = ["--trials", "2", "--epochs", "1", "--sentences", "20", "--encoder", "tiny", "--repeats", "2"]
    env = {"COLUMNS": "250", MIN_REPEATS_VARIABLE: "2"}
    code, out = finish(nerplat("bench", "peer", *flags, workdir=tmp_path, env=env), timeout=900)
    assert code == 0, out
    assert "2 trials x 1 epochs, 20 sentences, tiny" in out and "median (min-max) of 2 repeats" in out
    assert re.search(r"nerplat\s*[┃│]\s*Hugging Face Trainer \+ Optuna", out), out
    spread = r"\s*│\s*([\d.]+) \(([\d.]+)-([\d.]+)\)"
    names = ("wall time, s", "per trial, s", "best dev micro F1")
    wall, per_trial, best = (re.search(rf"{name}{spread}{spread}", out) for name in names)
    assert wall and per_trial and best, out
    for side in (0, 3):
        median, low, high = (float(wall[side + i]) for i in (1, 2, 3))
        assert low <= median <= high
        assert float(per_trial[side + 1]) == pytest.approx(median / 2, abs=0.1)
        assert 0 <= float(best[side + 1]) <= 1
    assert re.search(r"ratio \(peer wall / nerplat wall\): [\d.]+ \([\d.]+-[\d.]+\)", out)
    assert re.search(r"best dev micro F1, nerplat minus peer: -?[\d.]+ \(-?[\d.]+--?[\d.]+\)", out)
    # Each repeat trains both sides at its own seed, nerplat's as its trials recorded it.
    seeds = re.search(r"training seeds by repeat, both sides: ([\d, ]+)", out)
    assert seeds and [int(seed) for seed in seeds[1].split(", ")] == [TUNE_SEED - repeat for repeat in range(2)], out
    # In every repeat the peer's study tried exactly the learning rates nerplat drew.
    rates = re.search(r"learning rates tried by both: (\S+), (\S+);", out)
    assert rates and 2e-5 <= float(rates[1]) < float(rates[2]) <= 2e-4, out
