"""A bench side runs in a new Python process, its answer handed back as JSON."""

import os

import pytest

from nerplat.bench.side_process import timed_call


def test_a_side_runs_in_a_process_of_its_own_and_hands_back_its_answer():
    wall, pid = timed_call("os:getpid", {})
    assert pid != os.getpid() and wall > 0
    assert timed_call("json:loads", {"s": '{"best": [0.3, 1]}'})[1] == {"best": [0.3, 1]}


def test_a_side_that_fails_names_itself_and_its_exit_code():
    with pytest.raises(RuntimeError, match=r"json:loads ended with exit code 1"):
        timed_call("json:loads", {"s": "not json"})
