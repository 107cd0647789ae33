"""`nerplat bench tracking` for real: writers on a SQLite store, and the plan figures."""

import re

import pytest

from nerplat.cli import main


@pytest.mark.slow
def test_bench_tracking_prints_events_per_second_by_writers_and_the_plan_figures(capsys):
    flags = ["--writers", "1", "--writers", "2", "--trials", "1", "--epochs", "2", "--plan-trials", "200"]
    assert main(["bench", "tracking", *flags]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"sqlite\s*│\s*(\d+)\s*│\s*(\d+)\s*│\s*[\d.]+\s*│\s*([\d.]+)", out)
    assert [(int(writers), int(events)) for writers, events, _ in rows] == [(1, 5), (2, 10)], out
    assert "events/s" in out and re.search(r"sqlite( saturates at 1 writer\(s\)|: best [\d.]+ events/s at 2 writer\(s\))", out)
    assert re.search(r"nerplat plan, 200 trials: [\d.]+ s, peak RSS \d+ MB", out)
