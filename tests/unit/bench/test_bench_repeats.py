"""Medians with their spread, and two sides measured in turns."""

import pytest

from nerplat.bench.repeats import MIN_REPEATS, MIN_REPEATS_VARIABLE, Spread, check_repeats, interleaved, ratios
from nerplat.errors import UserInputError


def test_a_spread_is_the_median_min_and_max_of_its_repeats_in_their_order():
    spread = Spread.of([3, 1, 2, 10, 4])
    assert (spread.median, spread.min, spread.max) == (3.0, 1.0, 10.0)
    assert spread.repeats == [3.0, 1.0, 2.0, 10.0, 4.0]
    assert spread.text(1) == "3.0 (1.0-10.0)"


def test_two_sides_are_measured_in_turns():
    calls = []
    measured = interleaved({"a": lambda r: calls.append(("a", r)) or r, "b": lambda r: calls.append(("b", r)) or -r}, 3)
    assert calls == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    assert measured == {"a": [0, 1, 2], "b": [0, -1, -2]}


def test_a_ratio_is_taken_within_each_repeat_before_the_median():
    """A host twice as slow in repeats 3-5 moves both sides: the per-repeat ratio stays 2."""
    ours, theirs = [2, 2, 1, 1, 1], [1, 1, 0.5, 0.5, 0.5]
    assert ratios(ours, theirs).repeats == [2.0] * 5
    assert Spread.of(ours).median / Spread.of(theirs).median == 2.0  # here too, but not in general
    assert ratios([4, 1], [2, 1]).median == pytest.approx(1.5)


def test_fewer_than_five_repeats_are_refused_naming_the_flag():
    assert check_repeats(MIN_REPEATS) == 5
    with pytest.raises(UserInputError) as raised:
        check_repeats(4)
    assert "--repeats must be at least 5" in str(raised.value) and raised.value.problems[0].path == "--repeats"


def test_the_floor_is_lowered_by_its_environment_variable_and_a_bad_value_is_named(monkeypatch):
    monkeypatch.setenv(MIN_REPEATS_VARIABLE, "2")
    assert check_repeats(2) == 2
    with pytest.raises(UserInputError, match="--repeats must be at least 2"):
        check_repeats(1)
    monkeypatch.setenv(MIN_REPEATS_VARIABLE, "two")
    with pytest.raises(UserInputError) as raised:
        check_repeats(5)
    assert "NERPLAT_BENCH_MIN_REPEATS must be a positive integer, got 'two'" in str(raised.value)
