import pytest

from nerplat.run_keys import (
    SUMMARY_RUN_KEY,
    SUMMARY_RUN_NAME,
    arm_run_key,
    arm_run_name,
    replicate_run_key,
    replicate_run_name,
    trial_run_key,
    trial_run_name,
)


def test_run_keys_follow_the_documented_layout():
    arm = "conll2003/low_resource-100/mom"
    assert arm_run_key(arm, "tune") == "conll2003/low_resource-100/mom/tune"
    assert trial_run_key(arm, "a1b2_00003") == "conll2003/low_resource-100/mom/tune/a1b2_00003"
    assert replicate_run_key(arm, 3, 7) == "conll2003/low_resource-100/mom/replicate/seed3-partition7"
    assert SUMMARY_RUN_KEY == "summary"


def test_run_names_are_short_and_start_with_the_arm_label():
    assert arm_run_name("mom", "tune") == "mom · tune"
    assert trial_run_name("mom · low_resource-20", "t0003") == "mom · low_resource-20 · t0003"
    assert replicate_run_name("mom", seed=1, partition=0) == "mom · p0 · s1"
    assert SUMMARY_RUN_NAME == "summary"


def test_keys_are_deterministic():
    assert replicate_run_key("a", 1, 2) == replicate_run_key("a", 1, 2)
    assert trial_run_key("a", "t1") == trial_run_key("a", "t1")


@pytest.mark.parametrize("arm", ["it's", 'say "x"', "back\\slash", "", " padded"])
def test_keys_that_search_filters_cannot_match_are_refused(arm):
    with pytest.raises(ValueError, match="arm"):
        arm_run_key(arm, "tune")


def test_key_text_writes_what_a_run_key_cannot_hold_as_percent_escapes():
    from nerplat.run_keys import check_run_key_part, key_text

    assert key_text("o'brien") == "o%27brien" and key_text(' a"b\\c\t') == "%20a%22b%5Cc%09"
    assert key_text("low_resource-100") == "low_resource-100"
    assert check_run_key_part(key_text(" o'brien "), "arm")
