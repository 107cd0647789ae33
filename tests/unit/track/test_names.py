import pytest

from nerplat.track.names import SUMMARY_RUN_NAME, arm_run_name, replicate_run_name, trial_run_name


def test_run_names_follow_the_documented_layout():
    arm = "conll2003/low_resource-100/mom"
    assert arm_run_name(arm, "tune") == "conll2003/low_resource-100/mom/tune"
    assert trial_run_name(arm, "a1b2_00003") == "conll2003/low_resource-100/mom/tune/a1b2_00003"
    assert replicate_run_name(arm, 3, 7) == "conll2003/low_resource-100/mom/replicate/seed3-partition7"
    assert SUMMARY_RUN_NAME == "summary"


def test_names_are_deterministic():
    assert replicate_run_name("a", 1, 2) == replicate_run_name("a", 1, 2)
    assert trial_run_name("a", "t1") == trial_run_name("a", "t1")


@pytest.mark.parametrize("arm", ["it's", 'say "x"', "back\\slash", "", " padded"])
def test_names_that_search_filters_cannot_match_are_refused(arm):
    with pytest.raises(ValueError, match="arm"):
        arm_run_name(arm, "tune")
