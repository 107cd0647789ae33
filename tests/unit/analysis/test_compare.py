"""Paired comparisons: runs matched by keys, never by position; missing partners reported."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats as scipy_stats

from nerplat.analysis.compare import against_best_other, compare_pairs, compare_samplers, setting_axes, with_holm, with_power
from nerplat.analysis.synthetic import synthetic_replicates

METRICS = ["test_micro_f1", "test_micro_precision"]


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return synthetic_replicates(methods=("ce", "mom"), sizes=(20,), seeds=4, partitions=2, types=())


def _matched(frame: pl.DataFrame, method: str, metric: str) -> np.ndarray:
    return frame.filter(pl.col("method") == method).sort("seed", "partition")[metric].to_numpy()


@pytest.mark.parametrize("test", ["paired_t", "wilcoxon"])
def test_tests_equal_scipy_on_pairs_matched_by_seed_and_partition(frame, test):
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=3)
    result = compare_pairs(shuffled, [("mom", "ce")], METRICS, test)
    row = result.tests.filter(pl.col("metric") == "test_micro_f1").row(0, named=True)
    a, b = _matched(frame, "mom", "test_micro_f1"), _matched(frame, "ce", "test_micro_f1")
    reference = (scipy_stats.ttest_rel if test == "paired_t" else scipy_stats.wilcoxon)(a, b)
    assert row["n_pairs"] == 8
    assert row["p_value"] == pytest.approx(reference.pvalue)
    assert row["statistic"] == pytest.approx(reference.statistic)
    assert row["delta"] == pytest.approx((a - b).mean())
    assert result.missing.is_empty()


def test_position_pairing_would_give_another_answer(frame):
    """Guards the test above: the shuffle really changes which runs sit side by side."""
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=3)
    a = shuffled.filter(pl.col("method") == "mom")["test_micro_f1"].to_numpy()
    b = shuffled.filter(pl.col("method") == "ce")["test_micro_f1"].to_numpy()
    keyed = compare_pairs(shuffled, [("mom", "ce")], METRICS, "paired_t").tests.row(0, named=True)
    assert scipy_stats.ttest_rel(a, b).pvalue != pytest.approx(keyed["p_value"])


def test_a_missing_partner_is_reported_and_left_out(frame):
    gap = frame.filter(~((pl.col("method") == "ce") & (pl.col("seed") == 2) & (pl.col("partition") == 1)))
    result = compare_pairs(gap, [("mom", "ce")], METRICS, "paired_t")
    assert result.tests["n_pairs"].to_list() == [7, 7]
    (row,) = result.missing.iter_rows(named=True)
    assert (row["method"], row["partner"], row["seed"], row["partition"]) == ("mom", "ce", 2, 1)
    assert row["partner_run_id"] is None and row["run_id"] is not None
    assert "no ce run" in row["detail"]


def test_a_partner_without_the_metric_is_reported(frame):
    failed = frame.with_columns(
        pl.when((pl.col("method") == "ce") & (pl.col("seed") == 0) & (pl.col("partition") == 0))
        .then(None).otherwise(pl.col("test_micro_f1")).alias("test_micro_f1")
    )
    result = compare_pairs(failed, [("mom", "ce")], METRICS, "paired_t")
    counts = dict(zip(result.tests["metric"], result.tests["n_pairs"]))
    assert counts == {"test_micro_f1": 7, "test_micro_precision": 8}
    (row,) = result.missing.iter_rows(named=True)
    assert row["detail"] == "ce run lacks test_micro_f1"


def test_heads_that_vary_within_a_method_become_settings():
    per_head = synthetic_replicates(methods=("ce", "mom"), heads=("softmax", "crf"), sizes=(20,), seeds=3, types=())
    assert setting_axes(per_head) == ["head"]
    result = compare_pairs(per_head, [("mom", "ce")], ["test_micro_f1"], "paired_t", setting_axes(per_head))
    assert sorted(result.tests["head"].to_list()) == ["crf", "softmax"]
    assert result.tests["n_pairs"].to_list() == [3, 3]


def test_a_head_fixed_by_the_method_is_not_a_setting(frame):
    crf = frame.with_columns(pl.when(pl.col("method") == "mom").then(pl.lit("crf")).otherwise(pl.col("head")).alias("head"))
    assert setting_axes(crf) == []
    assert compare_pairs(crf, [("mom", "ce")], ["test_micro_f1"], "paired_t").tests["n_pairs"].to_list() == [8]


def test_holm_is_applied_within_each_family():
    tests = pl.DataFrame({"family": ["a", "a", "b"], "p_value": [0.01, 0.04, 0.04]})
    adjusted = with_holm(tests, ["family"], alpha=0.05)
    assert adjusted["p_holm"].to_list() == pytest.approx([0.02, 0.04, 0.04])
    assert adjusted["significant"].to_list() == [True, True, True]
    assert with_holm(tests, ["family"], alpha=0.03)["significant"].to_list() == [True, False, False]


def test_the_paper_protocol_corrects_within_each_metric_not_across_p_r_and_f1():
    from nerplat.analysis.report import paired_comparisons
    from nerplat.analysis.settings import AnalysisSettings

    frame = synthetic_replicates(methods=("ce", "focal", "mom"), sizes=(20,), seeds=4, types=())
    tests = paired_comparisons(frame, AnalysisSettings(baseline="ce"), []).tests
    for metric, part in tests.partition_by("metric", as_dict=True).items():
        expected = with_holm(part.drop("p_holm", "significant"), ["family"], 0.05)["p_holm"]
        assert part["p_holm"].to_list() == pytest.approx(expected.to_list()), metric
    assert tests.group_by("family", "metric").len()["len"].to_list() == [2, 2, 2]


def test_power_columns_come_from_the_paired_differences(frame):
    from nerplat.analysis.stats import minimum_detectable_effect, pairs_needed

    tests = with_power(compare_pairs(frame, [("mom", "ce")], METRICS, "paired_t").tests, alpha=0.05)
    row = tests.filter(pl.col("metric") == "test_micro_f1").row(0, named=True)
    differences = _matched(frame, "mom", "test_micro_f1") - _matched(frame, "ce", "test_micro_f1")
    assert row["sd_delta"] == pytest.approx(differences.std(ddof=1))
    assert row["mde"] == pytest.approx(minimum_detectable_effect(differences.std(ddof=1), 8, 0.05))
    assert row["n_needed"] == pairs_needed(differences.mean(), differences.std(ddof=1), 0.05)


def _resampled(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame under two samplers: `full` and `sc`, whose runs train on 4x the sentences (other size)."""
    full = frame.with_columns(
        pl.lit("full").alias("sampler"), pl.lit("full").alias("sampler_label"), pl.lit("full").alias("sampler_family")
    )
    sc = full.with_columns(
        pl.lit("sc").alias("sampler"), pl.lit("sc").alias("sampler_label"), pl.lit("sc").alias("sampler_family"),
        (pl.col("size") * 4).alias("size"), (pl.col("test_micro_f1") + 0.01 * pl.col("seed")).alias("test_micro_f1"),
        (pl.col("run_id") + "-sc").alias("run_id"),
    )
    return pl.concat([full, sc])


def test_samplers_are_compared_within_a_method_matched_by_seed_and_partition_not_size(frame):
    both = _resampled(frame).sample(fraction=1.0, shuffle=True, seed=1)
    result = compare_samplers(both, "full", METRICS, "paired_t")
    assert result.missing.is_empty()
    row = result.tests.filter((pl.col("method") == "mom") & (pl.col("metric") == "test_micro_f1")).row(0, named=True)
    assert (row["partner"], row["sampler"], row["partner_sampler"], row["n_pairs"]) == ("mom", "sc", "full", 8)
    mom = frame.filter(pl.col("method") == "mom").sort("seed", "partition")
    treated = mom["test_micro_f1"].to_numpy() + 0.01 * mom["seed"].to_numpy()
    assert row["p_value"] == pytest.approx(scipy_stats.ttest_rel(treated, mom["test_micro_f1"].to_numpy()).pvalue)
    assert sorted(result.tests["method"].unique().to_list()) == ["ce", "mom"]


def test_a_sampler_run_without_its_reference_run_is_reported(frame):
    both = _resampled(frame).filter(
        ~((pl.col("sampler") == "full") & (pl.col("seed") == 1) & (pl.col("partition") == 0) & (pl.col("method") == "ce"))
    )
    result = compare_samplers(both, "full", METRICS, "paired_t")
    (row,) = result.missing.iter_rows(named=True)
    assert (row["method"], row["sampler_label"], row["seed"]) == ("ce", "sc", 1)
    assert row["detail"] == "no full run with the same dataset, method, seed and partition"


def test_a_cell_one_side_never_ran_is_not_compared_nor_reported():
    """As in Wang & Wang 2022's cpu grid, where some models run some samplers only: here `ce` has no `sc` cell."""
    both = _resampled(synthetic_replicates(methods=("ce", "mom"), sizes=(20,), seeds=4, partitions=2, types=()))
    grid = both.filter(~((pl.col("method") == "ce") & (pl.col("sampler") == "sc")))
    pairs = compare_pairs(grid, [("mom", "ce")], METRICS, "paired_t")
    assert pairs.tests["sampler"].unique().to_list() == ["full"] and pairs.missing.is_empty()
    samplers = compare_samplers(grid, "full", METRICS, "paired_t")
    assert samplers.tests["method"].unique().to_list() == ["mom"] and samplers.missing.is_empty()


def test_a_cell_whose_runs_all_failed_is_still_reported(frame):
    failed = frame.with_columns(
        pl.when(pl.col("method") == "ce").then(None).otherwise(pl.col(m)).alias(m) for m in METRICS
    ).with_columns(pl.when(pl.col("method") == "ce").then(pl.lit("failed")).otherwise(pl.lit("completed")).alias("status"))
    result = compare_pairs(failed, [("mom", "ce")], METRICS, "paired_t")
    assert result.tests["n_pairs"].to_list() == [0, 0]
    assert result.missing.height == 8 and set(result.missing["detail"]) == {"ce run lacks test_micro_f1, test_micro_precision"}


def test_the_best_other_partner_is_the_highest_mean_dev_score():
    frame = synthetic_replicates(methods=("ce", "focal", "wce2", "mom"), sizes=(20,), seeds=3, types=())
    dev = {"ce": 0.50, "focal": 0.55, "wce2": 0.60, "mom": 0.90}  # mom's own dev score never counts
    frame = frame.with_columns(pl.col("method").replace_strict(dev, return_dtype=pl.Float64).alias("dev_best_micro_f1"))
    result = against_best_other(frame, "mom", "dev_best_micro_f1", METRICS, "paired_t")
    assert result.best_other["partner"].to_list() == ["wce2"]
    assert result.best_other["dev_score"].to_list() == pytest.approx([0.60])
    assert set(zip(result.tests["method"], result.tests["partner"])) == {("mom", "wce2")}
    assert result.tests["n_pairs"].to_list() == [3, 3]


def test_no_best_other_partner_without_dev_scores(frame):
    result = against_best_other(frame, "mom", "dev_best_micro_f1", METRICS, "paired_t")
    assert result.tests.is_empty() and result.best_other.is_empty()
