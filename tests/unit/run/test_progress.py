from rich.console import Console

from nerplat.run.progress import PhaseProgress, ProgressBoard


def test_best_follows_the_mode():
    high, low = PhaseProgress("a", "tune", 3, "max"), PhaseProgress("a", "tune", 3, "min")
    for value in (0.2, 0.5, 0.3):
        high.offer(value)
        low.offer(value)
    assert (high.best, low.best) == (0.5, 0.2)


def test_eta_from_mean_trial_time_and_slots():
    progress = PhaseProgress("a", "tune", total=10)
    assert progress.eta_seconds(2) is None  # nothing finished yet: no estimate, not a guess
    progress.finished, progress.skipped, progress.trial_seconds = 3, 1, [10.0, 20.0, 30.0]
    assert progress.done() == 4
    assert progress.eta_seconds(concurrency=2) == 20.0 * 6 / 2


def test_board_renders_every_phase():
    console = Console(record=True, width=200)
    board = ProgressBoard("exp", console, concurrency=2)
    board.phase("conll2003/full/ce", "replicate", 4).finished = 1
    tune = board.phase("conll2003/full/mom", "tune", 5)
    tune.offer(0.61)
    console.print(board.table())
    text = console.export_text()
    assert "conll2003/full/ce" in text and "1/4" in text and "0.6100" in text and "0/5" in text
