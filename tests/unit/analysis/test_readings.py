"""A claim's pairs read in another metric: the verdict's units (a partition's pairs averaged), each
side's mean and sd, the differences' mean and median, the units ahead and an unadjusted paired t."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy.stats import ttest_rel

from nerplat.analysis.readings import claim_readings, report_readings
from nerplat.analysis.settings import AnalysisSettings
from nerplat.config.experiment import Claim
from nerplat.errors import UserInputError

CLAIM = Claim(id="mom_vs_focal", paper="x", source="Fig. 2", method="mom", partner="focal", metric="token_macro_f1",
              direction="better")


def _runs(partitions: int, seeds: int, shift) -> pl.DataFrame:
    """focal and mom runs (mom's sentence accuracy = focal's + shift(partition, seed)), a failed run,
    and a method whose runs lack the metric."""
    rows = []
    for method in ("focal", "mom", "ce"):
        for partition in range(partitions):
            for seed in range(seeds):
                value = 0.6 + 0.01 * seed + 0.02 * partition + (shift(partition, seed) if method == "mom" else 0.0)
                rows.append({"run_id": f"{method}-{partition}-{seed}", "arm": f"conll2003/full/{method}", "method": method,
                             "dataset": "conll2003", "sampler": "none", "sampler_label": "full", "size": 100,
                             "seed": seed, "partition": partition, "status": "completed", "encoder": "tiny",
                             "head": "softmax", "test_token_macro_f1": 0.7,
                             "test_sentence_accuracy": None if method == "ce" else value})
    rows.append(rows[-1] | {"run_id": "failed", "method": "mom", "seed": seeds, "status": "failed",
                            "test_sentence_accuracy": 9.0})
    return pl.DataFrame(rows)


def test_seeds_are_the_units_of_one_partition_and_the_reading_is_their_paired_t():
    shifts = [0.010, 0.004, -0.002, 0.012, 0.006]
    (reading,) = claim_readings(_runs(1, 5, lambda p, s: shifts[s]), CLAIM, AnalysisSettings(), ["sentence_accuracy"], "runs")
    focal = 0.6 + 0.01 * np.arange(5)
    assert (reading.unit, reading.units, reading.partner, reading.metric) == ("seed", 5, "focal", "sentence_accuracy")
    assert reading.mean == pytest.approx(np.mean(focal + shifts)) and reading.partner_mean == pytest.approx(focal.mean())
    assert reading.sd == pytest.approx(np.std(focal + shifts, ddof=1))
    assert reading.delta == pytest.approx(np.mean(shifts)) and reading.median_delta == pytest.approx(0.006)
    assert reading.ahead == 4 and reading.p_value == pytest.approx(ttest_rel(focal + shifts, focal).pvalue)
    line = reading.line()
    assert line.startswith("mom_vs_focal, sentence_accuracy (conll2003 none): mom 0.6260 ± 0.0167, focal 0.6200 ± 0.0158 ")
    assert "over 5 seeds; difference +0.0060 (median +0.0060), mom ahead on 4 of 5; paired t p 0.0705, unadjusted" in line


def test_a_partitions_pairs_are_averaged_into_one_unit():
    (reading,) = claim_readings(_runs(4, 2, lambda p, s: 0.002 * p + (0.003 if s else -0.003)), CLAIM,
                                AnalysisSettings(), ["sentence_accuracy"], "runs")
    assert (reading.unit, reading.units) == ("partition", 4)
    assert reading.delta == pytest.approx(0.003) and reading.median_delta == pytest.approx(0.003)
    assert reading.ahead == 3  # partition 0's two pairs cancel: a difference of 0 is not ahead


def test_a_metric_one_side_lacks_reads_no_pairs_and_an_unknown_metric_is_refused_with_the_known_ones():
    versus_ce = Claim(**(CLAIM.model_dump() | {"id": "mom_vs_ce", "partner": "ce"}))
    (reading,) = claim_readings(_runs(1, 3, lambda p, s: 0.01), versus_ce, AnalysisSettings(), ["sentence_accuracy"], "runs")
    assert reading.units == 0 and math.isnan(reading.delta)
    assert reading.line().endswith("no pair has it on both sides (mom against ce)")
    with pytest.raises(UserInputError, match=r"runs has no test_word_accuracy: give --metric as one of sentence_accuracy, "
                                             r"token_macro_f1"):
        claim_readings(_runs(1, 3, lambda p, s: 0.01), CLAIM, AnalysisSettings(), ["word_accuracy"], "runs")


def test_a_report_folder_and_claim_are_named_when_missing(tmp_path):
    settings = AnalysisSettings(claims=(CLAIM,))
    with pytest.raises(UserInputError, match="runs.parquet does not exist: give a report folder"):
        report_readings(tmp_path, settings, "mom_vs_focal", ["sentence_accuracy"])
    _runs(1, 3, lambda p, s: 0.01 * (s + 1)).write_parquet(tmp_path / "runs.parquet")
    with pytest.raises(UserInputError, match="declares no claim 'nope': give --claim as one of mom_vs_focal"):
        report_readings(tmp_path, settings, "nope", ["sentence_accuracy"])
    (reading,) = report_readings(tmp_path, settings, "mom_vs_focal", ["sentence_accuracy"])
    assert reading.delta == pytest.approx(0.02) and reading.ahead == 3


def test_a_partner_metric_reads_the_partner_in_its_own_metric_and_needs_one_metric_and_a_named_partner():
    versus_ce = Claim(**(CLAIM.model_dump() | {"id": "mom_vs_ce", "partner": "ce"}))
    runs = _runs(1, 3, lambda p, s: 0.01)  # ce has no sentence accuracy, only token macro F1 (0.7)
    (reading,) = claim_readings(runs, versus_ce, AnalysisSettings(), ["sentence_accuracy"], "runs", "token_macro_f1")
    assert reading.units == 3 and reading.partner_mean == pytest.approx(0.7)
    assert reading.mean == pytest.approx(0.62) and reading.delta == pytest.approx(-0.08)
    assert reading.line().startswith("mom_vs_ce, sentence_accuracy against ce's token_macro_f1 (conll2003 none): mom 0.6200")
    with pytest.raises(UserInputError, match=r"give one --metric with it \(not 2\)"):
        claim_readings(runs, versus_ce, AnalysisSettings(), ["sentence_accuracy", "token_macro_f1"], "runs", "token_macro_f1")
    with pytest.raises(UserInputError, match="runs has no test_nope"):
        claim_readings(runs, versus_ce, AnalysisSettings(), ["sentence_accuracy"], "runs", "nope")
