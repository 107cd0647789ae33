import os
import stat

import pytest

from nerplat.track.predictions import read_conll_predictions, write_conll_predictions

TOKENS = [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"]]
GOLD = [["B-ORG", "O", "B-MISC", "O"], ["B-PER", "I-PER"]]
PRED = [["B-ORG", "O", "O", "O"], ["B-PER", "B-PER"]]


def test_predictions_round_trip(tmp_path):
    path = write_conll_predictions(tmp_path / "predictions.conll", TOKENS, GOLD, PRED)
    assert path.read_text().splitlines()[:2] == ["EU\tB-ORG\tB-ORG", "rejects\tO\tO"]
    assert path.read_text().endswith("I-PER\tB-PER\n\n")
    assert read_conll_predictions(path) == (TOKENS, GOLD, PRED)


def test_tokens_with_spaces_survive(tmp_path):
    path = write_conll_predictions(tmp_path / "p.conll", [["New York"]], [["B-LOC"]], [["B-LOC"]])
    assert read_conll_predictions(path) == ([["New York"]], [["B-LOC"]], [["B-LOC"]])


@pytest.mark.parametrize(
    "tokens,gold,pred",
    [
        (TOKENS, GOLD, PRED[:1]),  # sentence counts differ
        ([["a", "b"]], [["O"]], [["O", "O"]]),  # lengths differ within a sentence
        ([["a\tb"]], [["O"]], [["O"]]),  # a tab would shift the columns
        ([[]], [[]], [[]]),  # an empty sentence would vanish on reading
    ],
)
def test_misaligned_input_is_refused_and_nothing_is_written(tmp_path, tokens, gold, pred):
    with pytest.raises(ValueError):
        write_conll_predictions(tmp_path / "p.conll", tokens, gold, pred)
    assert list(tmp_path.iterdir()) == []


def test_the_file_gets_the_umask_mode_as_the_other_artifacts_not_0600(tmp_path):
    """Issue 62: 6 of a run's 94 artifacts (one predictions file per replicate) were mode 0600."""
    previous = os.umask(0o022)
    try:
        path = write_conll_predictions(tmp_path / "predictions.conll", [["EU"]], [["B-ORG"]], [["B-ORG"]])
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and [p.name for p in tmp_path.iterdir()] == ["predictions.conll"]
