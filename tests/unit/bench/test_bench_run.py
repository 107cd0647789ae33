import pytest

from nerplat.bench.runner_overhead import SlotTime, TrialTime, trial_blocks


def test_slot_time_splits_wall_time_times_slots_into_shares_that_sum_to_one():
    # Two slots over 10 s: a 6 s trial and a 3 s trial on one, an 8 s trial on the other.
    trials = [
        TrialTime(start=100.0, end=106.0, setup=1.0, train=4.0, evaluate=0.5),
        TrialTime(start=107.0, end=110.0, setup=0.5, train=2.0, evaluate=0.25),
        TrialTime(start=100.5, end=108.5, setup=1.0, train=6.0, evaluate=0.5),
    ]
    shares = SlotTime.of(trials, slots=2)
    assert shares.setup == pytest.approx(2.5 / 20)
    assert shares.train == pytest.approx(12.0 / 20)
    assert shares.evaluate == pytest.approx(1.25 / 20)
    assert shares.trial_other == pytest.approx((17.0 - 15.75) / 20)
    assert shares.between_trials == pytest.approx(3.0 / 20)
    assert sum(vars(shares).values()) == pytest.approx(1.0)


def test_a_block_until_the_next_blocks_start_counts_the_gap_after_it_as_between_trials():
    trials = [TrialTime(start=0.0, end=4.0, setup=0.5, train=3.0, evaluate=0.25)]
    shares = SlotTime.of(trials, slots=1, until=5.0)
    assert shares.train == pytest.approx(3.0 / 5) and shares.between_trials == pytest.approx(1.0 / 5)


def test_trials_are_cut_into_blocks_of_consecutive_trials_as_equal_as_can_be():
    trials = [TrialTime(start=float(i), end=i + 0.5, setup=0.0, train=0.5, evaluate=0.0) for i in range(22)]
    blocks = trial_blocks(trials, 5)
    assert [len(block) for block in blocks] == [5, 5, 4, 4, 4]
    assert [t for block in blocks for t in block] == trials

