from nerplat.suggest import closest, did_you_mean, unknown_name


def test_the_closest_name_is_found_whatever_the_case_and_spelt_as_known():
    assert closest("mmo", ["ce", "mom"]) == "mom"
    assert closest("sCR", ["sc", "scr", "scrd"]) == "scr"
    assert closest("SCR", ["sCR"]) == "sCR"


def test_an_unambiguous_prefix_is_a_match_and_an_ambiguous_one_is_not():
    assert closest("gpus", ["gpus_per_worker", "cpus_per_worker", "workers"]) == "gpus_per_worker"
    assert closest("gpus", ["gpus_per_worker", "gpus_per_node_pool"]) is None


def test_nothing_close_suggests_nothing():
    assert closest("zzz", ["ce", "mom"]) is None
    assert did_you_mean("zzz", ["ce", "mom"]) == ""


def test_unknown_name_lists_every_known_name_sorted():
    assert unknown_name("loss", "mmo", ["mom", "ce"], "registered") == (
        "unknown loss 'mmo'; did you mean 'mom'? (registered: ce, mom)"
    )
    assert unknown_name("profile", "x", []) == "unknown profile 'x' (known: none)"
