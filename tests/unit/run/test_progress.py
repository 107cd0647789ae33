import io
import re
import time

import pytest
from rich.console import Console

from nerplat.run.progress import PhaseProgress, ProgressBoard, format_duration, format_eta

STAMP = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}"


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def piped_board(clock: FakeClock, concurrency: int = 1, every: float = 30.0) -> tuple[ProgressBoard, io.StringIO]:
    """A board writing to a stream that is not a terminal, as under CI or nohup."""
    stream = io.StringIO()
    console = Console(file=stream, width=150)
    assert not console.is_terminal
    return ProgressBoard("exp", console, concurrency=concurrency, every=every, clock=clock), stream


def test_best_follows_the_mode():
    high, low = PhaseProgress("a", "tune", 3, "max"), PhaseProgress("a", "tune", 3, "min")
    for value in (0.2, 0.5, 0.3):
        high.offer(value)
        low.offer(value)
    assert (high.best, low.best) == (0.5, 0.2)


def test_overall_eta_from_measured_trial_times_over_every_phase_and_slot():
    board, _ = piped_board(FakeClock(), concurrency=2)
    tune = board.phase("a", "tune", total=10)
    replicate = board.phase("a", "replicate", total=4)
    assert board.eta_seconds() is None and board.eta_text() == "estimating"  # nothing finished: no guess
    tune.finished, tune.skipped, tune.trial_seconds = 3, 1, [10.0, 20.0, 30.0]
    # tune: 6 left at its mean 20 s; replicate: 4 left at the mean of all measured trials (20 s) until its own end
    assert board.eta_seconds() == (6 * 20.0 + 4 * 20.0) / 2
    replicate.finished, replicate.trial_seconds = 1, [50.0]
    assert board.eta_seconds() == (6 * 20.0 + 3 * 50.0) / 2
    assert board.eta_text() == "2m15s"


def test_eta_never_reads_zero_while_trials_remain():
    assert format_eta(0.2, remaining=1) == "1s"
    assert format_eta(0.0, remaining=3) == "1s"
    assert format_eta(None, remaining=3) == "estimating"
    assert format_eta(0.0, remaining=0) == "done"
    board, _ = piped_board(FakeClock())
    progress = board.phase("a", "tune", total=2)
    progress.finished, progress.trial_seconds = 1, [0.01]
    assert board.eta_text() == "1s"
    progress.finished = 2
    assert board.eta_text() == "done"


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (59.9, "59s"), (65, "1m05s"), (7260, "2h01m")])
def test_durations_read_at_a_glance(seconds, text):
    assert format_duration(seconds) == text


def test_board_renders_every_phase_with_elapsed_time_and_eta():
    clock = FakeClock()
    console = Console(record=True, width=200)
    board = ProgressBoard("exp", console, concurrency=2, clock=clock)
    board.phase("conll2003/full/ce", "replicate", 4).finished = 1
    tune = board.phase("conll2003/full/mom", "tune", 5)
    tune.offer(0.61)
    clock.now += 75
    console.print(board.table())
    text = console.export_text()
    assert "conll2003/full/ce" in text and "1/4" in text and "0.6100" in text and "0/5" in text
    assert "elapsed 1m15s" in text and "ETA estimating" in text


def test_stage_lines_are_printed_at_once_with_the_time():
    board, stream = piped_board(FakeClock())
    board.stage("starting Ray (embedded, on 127.0.0.1)")
    board.stage("Ray started, dashboard at http://127.0.0.1:8265")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(rf"{STAMP} starting Ray \(embedded, on 127\.0\.0\.1\)", lines[0])
    assert lines[1].endswith("Ray started, dashboard at http://127.0.0.1:8265")


def test_status_line_gives_elapsed_eta_counts_and_running_phases():
    clock = FakeClock()
    board, _ = piped_board(clock, concurrency=2)
    tune = board.phase("conll2003/full/mom", "tune", 5)
    board.phase("conll2003/full/mom", "replicate", 2)
    tune.finished, tune.running, tune.trial_seconds = 2, 2, [30.0, 50.0]
    tune.offer(0.61)
    clock.now += 125
    line = board.status_line()
    assert re.match(STAMP, line)
    assert "elapsed 2m05s" in line and "ETA 1m40s" in line  # (3 + 2) trials x 40 s over 2 slots
    assert "trials 2/7 done" in line
    assert "conll2003/full/mom tune 2/5 (2 running, best dev 0.6100)" in line
    assert "replicate" not in line  # nothing of it runs yet


def test_a_board_that_is_not_on_a_terminal_prints_status_lines_every_so_often():
    board, stream = piped_board(FakeClock(), every=0.02)
    board.phase("a", "tune", 3).running = 1
    with board:
        deadline = time.monotonic() + 5
        while stream.getvalue().count("trials 0/3 done") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    text = stream.getvalue()
    assert text.count("trials 0/3 done") >= 2, text
    assert "a tune 0/3 (1 running)" in text
    assert "nerplat run: exp" in text  # the final table once, at the end
