"""Claims as code: every verdict follows from its own numbers by one rule."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates
from nerplat.analysis.verdicts import VERDICT_COLUMNS, arm_frame, verdicts
from nerplat.config.experiment import Claim

METRIC = "test_macro_f1"


def _frame(gains: dict[str, float], seeds: int = 6, noise: float = 0.004, dev: dict[str, float] | None = None) -> pl.DataFrame:
    """Replicates of each method at one size whose test macro F1 is 0.7 + gain + noise (seeded)."""
    frame = synthetic_replicates(methods=tuple(gains), sizes=(100,), seeds=seeds, types=())
    rng = np.random.default_rng(1)
    shared = rng.normal(0, 0.01, seeds)  # a seed effect both methods share: what pairing removes
    values = [0.7 + gains[r["method"]] + shared[r["seed"]] + rng.normal(0, noise) for r in frame.iter_rows(named=True)]
    dev = dev or gains
    return frame.with_columns(
        pl.Series(METRIC, values),
        pl.Series("dev_best_macro_f1", [0.7 + dev[m] for m in frame["method"]]),
    )


def _cells(frame: pl.DataFrame, converged: dict[str, bool] | None = None) -> pl.DataFrame:
    cells = frame.select("dataset", "sampler", "method").unique().sort("method")
    return cells.with_columns(pl.col("method").replace_strict(converged or {}, default=True, return_dtype=pl.Boolean).alias("converged"))


def _settings(*claims: Claim, **extra) -> AnalysisSettings:
    return AnalysisSettings(claims=claims, average="macro", **extra)


def _claim(effect: float, partner: str = "ce", claim_id: str = "mom_vs_ce") -> Claim:
    return Claim(id=claim_id, paper="Nemoto et al. 2024, Table 3", method="mom", partner=partner, metric="macro_f1", effect=effect)


def test_the_rule_gives_reproduced_contradicted_and_inconclusive_from_the_interval():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    claims = (_claim(0.02, claim_id="same_side"), _claim(-0.02, claim_id="opposite"), _claim(0.03, claim_id="tiny_gain"))
    rows = {r["claim"]: r for r in verdicts(frame, _cells(frame), _settings(*claims), aso=False).iter_rows(named=True)}
    assert rows["same_side"]["verdict"] == "reproduced"  # interval above 0, the paper's side
    assert rows["opposite"]["verdict"] == "contradicted"  # the paper says -0.02: the interval excludes it and 0
    for row in rows.values():
        assert row["ci_low"] < row["delta"] < row["ci_high"] and row["n_pairs"] == 6
        assert row["delta"] == pytest.approx(0.03, abs=0.01)
    tie = _frame({"ce": 0.0, "mom": 0.0}, noise=0.01)
    (row,) = verdicts(tie, _cells(tie), _settings(_claim(0.001)), aso=False).iter_rows(named=True)
    assert row["ci_low"] < 0 < row["ci_high"]
    inside = row["ci_high"] / 2  # a paper effect the interval neither reaches past 0 from nor excludes
    (row,) = verdicts(tie, _cells(tie), _settings(_claim(inside)), aso=False).iter_rows(named=True)
    assert row["verdict"] == "inconclusive"


def test_an_unconverged_cell_makes_any_claim_inconclusive():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    (row,) = verdicts(frame, _cells(frame, {"ce": False}), _settings(_claim(0.02)), aso=False).iter_rows(named=True)
    assert row["converged"] is False and row["verdict"] == "inconclusive" and row["ci_low"] > 0


def test_the_interval_is_at_the_holm_level_of_the_claims_family():
    """Each interval excludes 0 exactly when its Holm-adjusted p is below alpha."""
    frame = _frame({"ce": 0.0, "focal": 0.004, "mom": 0.012}, seeds=5, noise=0.006)
    claims = [
        Claim(id=f"{m}_vs_{p}", paper="x", method=m, partner=p, metric="macro_f1", effect=0.01)
        for m, p in (("mom", "ce"), ("focal", "ce"), ("mom", "focal"))
    ]
    rows = verdicts(frame, _cells(frame), _settings(*claims), aso=False)
    assert rows["p_holm"].to_list() != rows["p_value"].to_list()
    for row in rows.iter_rows(named=True):
        excludes_zero = row["ci_low"] > 0 or row["ci_high"] < 0
        assert excludes_zero == (row["p_holm"] < 0.05), row
        assert row["ci_level"] == pytest.approx(1 - 0.05 * row["p_value"] / row["p_holm"])


def test_best_other_is_the_partner_with_the_best_dev_score():
    frame = _frame({"ce": 0.0, "focal": 0.05, "mom": 0.03}, dev={"ce": 0.0, "focal": 0.01, "mom": 0.0})
    (row,) = verdicts(frame, _cells(frame), _settings(_claim(0.0016, partner="best_other")), aso=False).iter_rows(named=True)
    assert row["partner"] == "focal" and row["delta"] == pytest.approx(-0.02, abs=0.01)
    assert row["verdict"] == "contradicted" and row["p_vs_paper"] < 0.05


def test_tuning_effort_and_cost_come_from_the_plan_and_the_runs():
    frame = _frame({"ce": 0.0, "mom": 0.03}).with_columns(pl.lit(100.0).alias("trial_seconds"))
    arms = {a: a.rsplit("/", 1)[1] for a in frame["arm"].unique().to_list()}
    plan = {"arms": [
        {"id": arm, "tune_trials": 8 if method == "mom" else 0, "search_space": {"objective.lambda": {}} if method == "mom" else {},
         "fixed": {"train": {"epochs": 10}}, "resources": {"workers": 1, "cpus_per_worker": 2.0, "gpus_per_worker": 0.0}}
        for arm, method in arms.items()
    ]}
    trials = frame.filter(pl.col("method") == "mom").select("arm", pl.lit(50.0).alias("time_train_s"))
    (row,) = verdicts(frame, _cells(frame), _settings(_claim(0.02)), arms=arm_frame(plan), trials=trials, aso=False).iter_rows(named=True)
    assert (row["method_trials"], row["method_searched"], row["method_epochs"]) == (8, "objective.lambda", 10)
    assert (row["partner_trials"], row["partner_searched"], row["partner_epochs"]) == (0, "", 10)
    # 12 replicates of 100 s and 6 trials of 50 s, on 2 CPUs each
    assert row["cpu_hours"] == pytest.approx((12 * 100 + 6 * 50) * 2 / 3600) and row["gpu_hours"] == 0


def test_a_sequential_design_stops_a_claim_at_the_look_that_decides_it():
    from nerplat.config.experiment import Sequential

    frame = _frame({"ce": 0.0, "mom": 0.05}, seeds=9, noise=0.002)
    settings = _settings(_claim(0.04), sequential=Sequential(max_seeds=9, look_every=3, spending="pocock"))
    (row,) = verdicts(frame, _cells(frame), settings, aso=False).iter_rows(named=True)
    assert row["design"].startswith("sequential (pocock") and row["decided_look"] == 0 and row["n_pairs"] == 3
    assert row["verdict"] == "reproduced" and row["ci_low"] < row["delta"] < row["ci_high"]
    undecided = _frame({"ce": 0.0, "mom": 0.0}, seeds=9, noise=0.01)
    small = _settings(_claim(0.005), sequential=settings.sequential)  # inside every look's interval, beside 0
    (row,) = verdicts(undecided, _cells(undecided), small, aso=False).iter_rows(named=True)
    assert row["decided_look"] is None and row["looks_taken"] == 3 and row["n_pairs"] == 9


def test_aso_is_reported_both_ways_and_claims_without_runs_give_no_rows():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    (row,) = verdicts(frame, _cells(frame), _settings(_claim(0.02))).iter_rows(named=True)
    assert 0 <= row["aso_eps_min"] < 0.5 < row["aso_eps_min_reverse"] <= 1
    claim = Claim(**(_claim(0.02).model_dump() | {"where": {"dataset": "wnut17"}}))
    empty = verdicts(frame, _cells(frame), _settings(claim))
    assert empty.is_empty() and tuple(empty.columns) == VERDICT_COLUMNS


def test_a_claim_of_direction_only_is_reproduced_above_zero_and_contradicted_below():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    better = Claim(id="better", paper="Nguyen et al. 2023b, Fig. 2", method="mom", partner="ce", metric="macro_f1", direction="better")
    worse = Claim(id="worse", paper="x", method="mom", partner="ce", metric="macro_f1", direction="worse")
    rows = {r["claim"]: r for r in verdicts(frame, _cells(frame), _settings(better, worse), aso=False).iter_rows(named=True)}
    assert rows["better"]["verdict"] == "reproduced" and rows["better"]["paper_effect"] is None and rows["better"]["p_vs_paper"] is None
    assert rows["worse"]["verdict"] == "contradicted" and rows["worse"]["direction"] == "worse"
    with pytest.raises(ValueError, match="effect .* or only its direction"):
        Claim(id="x", paper="x", method="mom", partner="ce", metric="macro_f1")


def test_a_claim_across_sampler_settings_pairs_one_method_by_seed():
    frame = synthetic_replicates(methods=("ce",), sizes=(100, 200), seeds=5, types=())
    frame = frame.with_columns(pl.when(pl.col("size") == 200).then(0.75).otherwise(0.70).add(pl.col("seed") * 0.001).alias(METRIC))
    claim = Claim(id="resampled", paper="Wang & Wang 2022, Table 3", method="ce", partner="ce", partner_sampler="low_resource-100",
                  where={"sampler": "low_resource-200"}, metric="macro_f1", effect=0.0693)
    (row,) = verdicts(frame, _cells(frame), _settings(claim), aso=False).iter_rows(named=True)
    assert row["n_pairs"] == 5 and row["delta"] == pytest.approx(0.05) and row["converged"] is True
    assert len(row["arms"]) == 2 and row["sampler"].startswith("low_resource(size=200")
    with pytest.raises(ValueError, match="across sampler settings"):
        Claim(id="x", paper="x", method="ce", partner="ce", partner_sampler="low_resource-100", metric="macro_f1", effect=0.1)
