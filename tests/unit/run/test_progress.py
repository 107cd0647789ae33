import io
import math
import re
import time

import pytest
from host_load import scaled
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


def test_the_eta_waits_for_a_first_epoch_then_lays_every_trial_on_the_slots():
    clock = FakeClock()
    board, _ = piped_board(clock, concurrency=2)
    assert board.eta_text() == "estimating"  # no phase known yet: never "done" before anything ran
    tune, replicate = board.phase("a", "tune", 4), board.phase("a", "replicate", 2)
    tune.epochs = replicate.epochs = 3
    board.trial_started("t1", tune)
    board.trial_started("t2", tune)
    clock.now += 5
    assert board.eta_seconds() is None and board.eta_text() == "estimating"  # running, nothing measured
    board.trial_evaluated("t1", 1, 3, 10.0)
    board.trial_evaluated("t2", 1, 3, 10.0)
    # running: 30 s each, 5 s gone, so 25 s; then 2 tune and 2 replicate trials of 30 s on 2 slots
    assert board.eta_seconds() == 25 + 30 + 30
    clock.now += 3
    assert board.eta_seconds() == 22 + 30 + 30  # the clock moves the ETA, not only events
    clock.now += 7
    assert board.eta_seconds() == 2 * 10 + 30 + 30  # but no faster than its 2 epochs left at the measured rate
    board.trial_ended("t1")
    assert tune.running == 1 and board.times["a"].overheads == [15 - 1 * 10.0]  # beyond the epochs it reported


def test_the_eta_is_given_once_a_trial_ends_though_no_epoch_was_measured():
    """A trial that ends before any evaluation reached the board (evaluating only at its end, a fit
    without epochs) once left "estimating" for most of a short run (issue 47): its wall time is a trial's length."""
    clock = FakeClock()
    board, _ = piped_board(clock, concurrency=2)
    tune, replicate = board.phase("a", "tune", 4), board.phase("a", "replicate", 2)
    board.trial_started("t1", tune)
    board.trial_started("t2", tune)
    clock.now += 40
    assert board.eta_text() == "estimating"
    board.trial_ended("t1")
    tune.finished = 1
    board.trial_started("t3", tune)
    clock.now += 10
    # t2: 40 s of 40 gone, so its end is due (0 s); t3 30 s left; then 1 tune and 2 replicate trials of 40 s on 2 slots
    assert board.eta_seconds() == 40 + 40 and board.eta_text() == "1m20s"
    board.trial_evaluated("t3", 1, 2, 10.0)  # a measured epoch takes over: a trial is 2 epochs of 10 s
    # t2 has both epochs left (20 s), t3 one (10 s); then 1 tune and 2 replicate trials of 20 s on 2 slots
    assert board.eta_seconds() == 10 + 20 + 20 and replicate.remaining() == 2


def test_an_arm_without_measured_epochs_borrows_the_other_arms_rate_scaled_by_its_epochs():
    clock = FakeClock()
    board, _ = piped_board(clock, concurrency=1)
    first, second = board.phase("a", "replicate", 1), board.phase("b", "replicate", 1)
    first.epochs, second.epochs = 2, 4
    board.trial_started("t1", first)
    board.trial_evaluated("t1", 2, 2, 3.0)
    assert board.eta_seconds() == 6.0 + 4 * 3.0  # t1 at its last epoch: its 6 s are its floor
    board.trial_ended("t1")
    board.phase("a", "replicate", 1).finished = 1
    assert board.eta_seconds() == 4 * 3.0


def test_eta_never_reads_zero_while_trials_remain():
    assert format_eta(0.2, remaining=1) == "1s"
    assert format_eta(0.0, remaining=3) == "1s"
    assert format_eta(None, remaining=3) == "estimating"
    assert format_eta(0.0, remaining=0) == "done"
    board, _ = piped_board(FakeClock())
    progress = board.phase("a", "replicate", 2)
    progress.epochs = 1
    board.trial_started("t", progress)
    board.trial_evaluated("t", 1, 1, 0.01)
    assert board.eta_text() == "1s"
    board.trial_ended("t")
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
    assert "conll2003/full/ce" in text and "1/4" in text and "0.6100" in text and "0/5" in text  # no labels given: the ids
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
    tune.finished = 2
    for trial in ("t3", "t4"):
        board.trial_started(trial, tune)
        board.trial_evaluated(trial, 1, 4, 10.0)
    tune.offer(0.61)
    clock.now += 125
    line = board.status_line()
    assert re.match(STAMP, line)
    # running trials: 3 epochs x 10 s left each; then 1 tune and 2 replicate trials of 40 s on 2 slots
    assert "elapsed 2m05s" in line and "ETA 1m50s" in line
    assert "trials 2/7 done" in line
    assert "conll2003/full/mom tune 2/5 (2 running, best dev 0.6100)" in line
    assert "replicate" not in line  # nothing of it runs yet


def test_a_board_that_is_not_on_a_terminal_prints_status_lines_every_so_often():
    board, stream = piped_board(FakeClock(), every=0.02)
    board.trial_started("t", board.phase("a", "tune", 3))
    with board:
        deadline = time.monotonic() + scaled(5)
        while stream.getvalue().count("trials 0/3 done") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    text = stream.getvalue()
    assert text.count("trials 0/3 done") >= 2, text
    assert "a tune 0/3 (1 running)" in text
    assert "nerplat run: exp" in text  # the final table once, at the end


def simulate(board: ProgressBoard, clock: FakeClock, trials: list[tuple[PhaseProgress, float, float]], slots: int):
    """Runs `trials` (phase, seconds per epoch, overhead) FIFO on `slots`, a second at a time, feeding the
    board as Tune's events would: start, an evaluation after each epoch, end. Yields (share of the
    trial-seconds done, the board's ETA and its text) every second once a third of the work is done;
    the replicates start when every tune trial has ended, as in the runner."""
    total = sum(o + p.epochs * r for p, r, o in trials)
    queue, running, done_work = list(trials), {}, 0.0
    setup = 0.5  # of each trial's overhead, spent before its first epoch; the rest after its last
    while queue or running:
        tuning = any(entry[0].phase == "tune" for entry in running.values())
        while queue and len(running) < slots and not (queue[0][0].phase == "replicate" and tuning):
            trial_id = f"t{len(queue)}"
            phase, rate, overhead = queue.pop(0)
            board.trial_started(trial_id, phase)
            running[trial_id] = (phase, rate, overhead, clock.now)
        if done_work >= total / 3:
            yield done_work / total, board.eta_seconds(), board.eta_text()
        clock.now += 1
        done_work += len(running)
        for trial_id, (phase, rate, overhead, started) in list(running.items()):
            elapsed = clock.now - started
            epoch = math.floor((elapsed - overhead * setup) / rate) if elapsed > overhead * setup else 0
            epoch = min(epoch, phase.epochs)
            if epoch and epoch != board._trials[trial_id].active[trial_id].epoch:
                board.trial_evaluated(trial_id, epoch, phase.epochs, rate)
            if elapsed >= overhead + phase.epochs * rate:
                board.trial_ended(trial_id)
                phase.finished += 1
                del running[trial_id]
                if not queue and not running:
                    return


def test_the_eta_of_a_simulated_run_is_within_a_quarter_of_the_truth_once_a_third_is_done():
    """Two arms of different epochs and speeds (one measured only when its replicates start: until then it
    borrows the other's rate), a tune phase whose trials differ by 20%, then replicates."""
    clock = FakeClock(0.0)
    board, _ = piped_board(clock, concurrency=2)
    slow_tune, slow, fast = (
        board.phase("slow", "tune", 4), board.phase("slow", "replicate", 3), board.phase("fast", "replicate", 5)
    )
    slow_tune.epochs = slow.epochs = 6
    fast.epochs = 4
    tune_rates = (9.0, 11.0, 10.0, 12.0)
    trials = [(slow_tune, rate, 20.0) for rate in tune_rates] + [(slow, 10.0, 20.0)] * 3 + [(fast, 8.0, 14.0)] * 5
    frames = []
    for share, eta, text in simulate(board, clock, trials, slots=2):
        frames.append((clock.now, share, eta, text))
    end = clock.now
    assert frames and frames[0][1] >= 1 / 3
    for now, share, eta, text in frames:
        truth = end - now
        assert text != "done" and eta is not None, (now, share)
        assert abs(eta - truth) <= 0.25 * truth, (now, share, eta, truth)
    etas = [eta for _, _, eta, _ in frames]
    assert sum(later < earlier for earlier, later in zip(etas, etas[1:])) > 0.9 * (len(etas) - 1)  # moving, not frozen
    assert board.eta_text() == "done"


def test_the_table_names_arms_by_their_short_labels_and_fits_80_columns():
    from types import SimpleNamespace

    console = Console(record=True, width=80)
    board = ProgressBoard("quickstart", console, concurrency=2, clock=FakeClock())
    arms = [
        SimpleNamespace(id=f"conll2003/untyped+low_resource-100/{m}", label=f"{m} · low_resource-100",
                        fixed={"train": {"epochs": 6}}, search_space={})
        for m in ("ce", "mom", "auc2t")
    ]
    board.describe(arms)
    for arm in arms:
        board.phase(arm.id, "replicate", 3)
    board.phase(arms[1].id, "tune", 4).offer(0.6113)
    console.print(board.table())
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "conll2003/" not in text and "0.6113" in text and board.phases[(arms[0].id, "replicate")].epochs == 6
    words = {word for line in text.splitlines() for word in line.replace("│", " ").replace("┃", " ").split()}
    assert {"ce", "mom", "auc2t", "low_resource-100", "replicate", "tune", "estimating"} <= words  # no word split
