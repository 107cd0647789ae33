"""`nerplat bench peer` shrunk to 2 trials x 1 epoch of the tiny encoder: both sides run (nerplat on
embedded Ray, the Trainer in-process) and the table holds their figures. Never a timing."""

import re

import pytest
from nerplat_processes import finish, nerplat

pytestmark = pytest.mark.slow


def test_bench_peer_prints_wall_per_trial_best_dev_and_ratio_for_both_sides(tmp_path):
    flags = ["--trials", "2", "--epochs", "1", "--sentences", "20", "--encoder", "tiny"]
    code, out = finish(nerplat("bench", "peer", *flags, workdir=tmp_path, env={"COLUMNS": "200"}), timeout=600)
    assert code == 0, out
    assert "2 trials x 1 epochs, 20 sentences, tiny" in out
    assert re.search(r"nerplat\s*[┃│]\s*Hugging Face Trainer \+ Optuna", out), out
    number = r"\s*│\s*([\d.]+)"
    wall, per_trial, best = (re.search(rf"{name}{number}{number}", out) for name in ("wall time, s", "per trial, s", "best dev micro F1"))
    assert wall and per_trial and best, out
    for side in (1, 2):
        assert float(per_trial[side]) == pytest.approx(float(wall[side]) / 2, abs=0.1)
        assert 0 <= float(best[side]) <= 1
    assert re.search(r"ratio \(peer wall / nerplat wall\): [\d.]+", out)
    # The peer's study tried exactly the learning rates nerplat drew.
    rates = re.search(r"learning rates tried by both: (\S+), (\S+)\n", out)
    assert rates and 2e-5 <= float(rates[1]) < float(rates[2]) <= 2e-4, out
