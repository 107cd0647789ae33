"""Claims as code: every verdict follows from its own numbers by one rule."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from nerplat.analysis.context_tables import paper_and_source, verdicts_table
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.table_model import p_text
from nerplat.analysis.synthetic import synthetic_replicates
from nerplat.analysis.verdict_text import OLD_REPORT, verdict_text
from nerplat.analysis.verdict_context import arm_frame
from nerplat.analysis.verdicts import VERDICT_COLUMNS, claim_looks, verdicts
from nerplat.config.experiment import Claim, Sequential

METRIC = "test_macro_f1"


def _frame(gains: dict[str, float], seeds: int = 6, noise: float = 0.004, dev: dict[str, float] | None = None,
           partitions: int = 1, converged: dict[str, bool | None] | None = None) -> pl.DataFrame:
    """Replicates of each method at one size whose test macro F1 is 0.7 + gain + noise (seeded);
    `converged_run` per method (default True)."""
    frame = synthetic_replicates(methods=tuple(gains), sizes=(100,), seeds=seeds, partitions=partitions, types=())
    rng = np.random.default_rng(1)
    shared = rng.normal(0, 0.01, (seeds, partitions))  # a seed effect both methods share: what pairing removes
    values = [
        0.7 + gains[r["method"]] + shared[r["seed"], r["partition"]] + rng.normal(0, noise) for r in frame.iter_rows(named=True)
    ]
    dev = dev or gains
    flags = [(converged or {}).get(m, True) for m in frame["method"]]
    return frame.with_columns(
        pl.Series(METRIC, values),
        pl.Series("dev_best_macro_f1", [0.7 + dev[m] for m in frame["method"]]),
        pl.Series("converged_run", flags, dtype=pl.Boolean),
    )


def _settings(*claims: Claim, **extra) -> AnalysisSettings:
    return AnalysisSettings(claims=claims, average="macro", **extra)


def _claim(effect: float | None = None, partner: str = "ce", claim_id: str = "mom_vs_ce", **fields) -> Claim:
    return Claim(id=claim_id, paper="Nemoto et al. 2024", source="Table 3", method="mom", partner=partner, metric="macro_f1",
                 effect=effect, **fields)


def _rows(frame: pl.DataFrame, *claims: Claim, **extra) -> dict[str, dict]:
    return {r["claim"]: r for r in verdicts(frame, _settings(*claims, **extra), aso=False).iter_rows(named=True)}


def test_the_direction_is_judged_against_zero_whatever_the_paper_s_size():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    claims = (_claim(0.02, claim_id="same_side"), _claim(-0.02, claim_id="opposite"), _claim(0.3, claim_id="ten_times"))
    rows = _rows(frame, *claims)
    assert rows["same_side"]["direction_verdict"] == rows["same_side"]["verdict"] == "reproduced"  # interval above 0
    assert rows["opposite"]["direction_verdict"] == "opposite"  # the paper says below 0, the interval lies above
    assert rows["ten_times"]["direction_verdict"] == "reproduced"  # the size is the magnitude's business
    for row in rows.values():
        assert row["ci_low"] < row["delta"] < row["ci_high"] and row["n_units"] == row["n_pairs"] == 6 and row["unit"] == "seed"
        assert row["delta"] == pytest.approx(0.03, abs=0.01) and row["magnitude_verdict"] == "not comparable"
    tie = _frame({"ce": 0.0, "mom": 0.0}, noise=0.01)
    (row,) = _rows(tie, _claim(0.001)).values()
    assert row["ci_low"] < 0 < row["ci_high"] and row["direction_verdict"] == "inconclusive"


def test_a_run_that_did_not_converge_gates_the_verdict_and_an_unknown_one_too():
    frame = _frame({"ce": 0.0, "mom": 0.03}, converged={"ce": False})
    (row,) = _rows(frame, _claim(0.02)).values()
    assert row["converged"] is False and row["direction_verdict"] == "reproduced" and row["verdict"] == "inconclusive"
    unknown = _frame({"ce": 0.0, "mom": 0.03}, converged={"ce": None})
    (row,) = _rows(unknown, _claim(0.02)).values()
    assert row["converged"] is None and row["verdict"] == "inconclusive"
    (row,) = _rows(frame.drop("converged_run"), _claim(0.02)).values()
    assert row["converged"] is None and row["verdict"] == "inconclusive"


def test_the_magnitude_is_gated_by_convergence_like_the_verdict():
    comparable = _claim(0.03, comparable="bert-base on the full data, as the paper")
    (row,) = _rows(_frame({"ce": 0.0, "mom": 0.03}, noise=0.002), comparable).values()
    assert row["converged"] is True and row["magnitude_verdict"] == "consistent"
    for flag in (False, None):
        frame = _frame({"ce": 0.0, "mom": 0.03}, noise=0.002, converged={"ce": flag})
        (row,) = _rows(frame, comparable).values()
        assert row["converged"] is flag and row["magnitude_verdict"] == row["verdict"] == "inconclusive"
        (row,) = _rows(frame, _claim(0.03)).values()
        assert row["magnitude_verdict"] == "not comparable"  # nothing to gate


def test_convergence_is_read_from_exactly_the_runs_of_the_pairs():
    """A ce run with no mom partner (an extra seed kept for another claim) does not count."""
    frame = _frame({"ce": 0.0, "mom": 0.03})
    extra = frame.filter(pl.col("method") == "ce", pl.col("seed") == 0).with_columns(
        pl.lit(99, pl.Int64).alias("seed"), pl.lit("run-extra").alias("run_id"), pl.lit(False).alias("converged_run"))
    (row,) = _rows(pl.concat([frame, extra]), _claim(0.02)).values()
    assert row["converged"] is True and row["verdict"] == "reproduced"


def test_the_interval_is_at_the_holm_level_of_the_claims_family():
    """Each interval excludes 0 exactly when its Holm-adjusted p is below alpha."""
    frame = _frame({"ce": 0.0, "focal": 0.004, "mom": 0.012}, seeds=5, noise=0.006)
    claims = [
        Claim(id=f"{m}_vs_{p}", paper="x", source="Table 1", method=m, partner=p, metric="macro_f1", effect=0.01)
        for m, p in (("mom", "ce"), ("focal", "ce"), ("mom", "focal"))
    ]
    rows = verdicts(frame, _settings(*claims), aso=False)
    assert rows["p_holm"].to_list() != rows["p_value"].to_list()
    for row in rows.iter_rows(named=True):
        excludes_zero = row["ci_low"] > 0 or row["ci_high"] < 0
        assert excludes_zero == (row["p_holm"] < 0.05), row
        assert row["ci_level"] == pytest.approx(1 - 0.05 * row["p_value"] / row["p_holm"])


@pytest.mark.parametrize(
    ("gain", "effect", "paper_se", "magnitude"),
    [
        (0.03, 0.03, None, "consistent"),
        (0.03, 0.06, None, "smaller"),
        (0.03, 0.005, None, "larger"),
        (-0.03, -0.06, None, "smaller"),  # a negative effect: smaller in size is above it
        (0.03, 0.06, 0.03, "inconclusive"),  # the paper's own uncertainty widens the interval past twice its effect
    ],
)
def test_the_magnitude_is_judged_where_the_setting_is_comparable(gain, effect, paper_se, magnitude):
    frame = _frame({"ce": 0.0, "mom": gain}, noise=0.002)
    claim = _claim(effect, comparable="bert-base on the full data, as the paper", paper_se=paper_se)
    (row,) = _rows(frame, claim).values()
    assert row["magnitude_verdict"] == magnitude, row
    (row,) = _rows(frame, _claim(effect)).values()
    assert row["magnitude_verdict"] == "not comparable"


def test_the_magnitude_interval_is_at_a_fixed_bonferroni_level_over_the_comparable_claims():
    """1 - alpha / m, m the claims judged on magnitude, whatever each claim's p (the direction's Holm-matched
    level depends on it); the paper's standard error widens it at the same critical value."""
    from scipy import stats

    frame = _frame({"ce": 0.0, "focal": 0.004, "mom": 0.012}, seeds=5, noise=0.006)
    comparable = "bert-base on the full data, as the paper"
    claims = [
        Claim(id="mom_vs_ce", paper="x", source="Table 1", method="mom", partner="ce", metric="macro_f1", effect=0.01,
              comparable=comparable),
        Claim(id="focal_vs_ce", paper="x", source="Table 1", method="focal", partner="ce", metric="macro_f1", effect=0.01,
              comparable=comparable, paper_se=0.003),
        Claim(id="mom_vs_focal", paper="x", source="Table 1", method="mom", partner="focal", metric="macro_f1", effect=0.01),
    ]
    rows = {r["claim"]: r for r in verdicts(frame, _settings(*claims), aso=False).iter_rows(named=True)}
    critical = stats.t.isf(0.05 / 2 / 2, 4)  # two claims judged on magnitude
    for claim, paper_se in (("mom_vs_ce", 0.0), ("focal_vs_ce", 0.003)):
        row = rows[claim]
        method, partner = claim.split("_vs_")
        d = (
            frame.filter(pl.col("method") == method).sort("seed")[METRIC]
            - frame.filter(pl.col("method") == partner).sort("seed")[METRIC]
        ).to_numpy()
        half = critical * np.hypot(d.std(ddof=1) / np.sqrt(5), paper_se)
        assert (row["magnitude_ci_low"], row["magnitude_ci_high"]) == pytest.approx((row["delta"] - half, row["delta"] + half))
        assert row["ci_level"] != pytest.approx(1 - 0.05 / 2)  # the direction's interval is Holm's, not this one
    assert rows["mom_vs_focal"]["magnitude_ci_low"] is None and rows["mom_vs_focal"]["magnitude_verdict"] == "not comparable"
    text = verdict_text(rows["mom_vs_ce"])
    assert text.magnitude == (
        f"{rows['mom_vs_ce']['magnitude_verdict']} "
        f"([{rows['mom_vs_ce']['magnitude_ci_low']:+.4f}, {rows['mom_vs_ce']['magnitude_ci_high']:+.4f}])"
    )


def test_a_sequential_magnitude_interval_is_the_repeated_interval_of_the_look():
    frame = _frame({"ce": 0.0, "mom": 0.03}, seeds=9, noise=0.004)
    claim = _claim(0.03, comparable="bert-base on the full data, as the paper")
    (row,) = _rows(frame, claim, sequential=Sequential(max_seeds=9, look_every=3, spending="pocock")).values()
    assert (row["magnitude_ci_low"], row["magnitude_ci_high"]) == pytest.approx((row["ci_low"], row["ci_high"]))


def test_an_equivalence_claim_is_a_tost_at_its_margin():
    frame = _frame({"ce": 0.0, "mom": 0.001, "focal": 0.05}, noise=0.002)
    on_par = _claim(claim_id="on_par", kind="equivalent", margin=0.01)
    apart = Claim(id="apart", paper="x", source="sec. V", kind="equivalent", margin=0.01, method="focal", partner="ce",
                  metric="macro_f1")
    wide = _claim(claim_id="wide", kind="equivalent", margin=0.0001)
    rows = _rows(frame, on_par, apart, wide)
    assert rows["on_par"]["direction_verdict"] == "equivalent"
    assert -0.01 < rows["on_par"]["ci_low"] < rows["on_par"]["ci_high"] < 0.01
    assert rows["apart"]["direction_verdict"] == "not equivalent" and rows["apart"]["ci_low"] >= 0.01
    assert rows["wide"]["direction_verdict"] == "inconclusive"
    assert rows["on_par"]["direction"] == "on par (±0.01)" and rows["on_par"]["magnitude_verdict"] == "not comparable"
    assert rows["on_par"]["p_holm"] < 0.05
    assert rows["on_par"]["ci_level"] == pytest.approx(1 - 2 * 0.05 * rows["on_par"]["p_value"] / rows["on_par"]["p_holm"])


def test_partitions_are_the_unit_where_the_runs_have_several():
    frame = _frame({"ce": 0.0, "mom": 0.03}, seeds=3, partitions=4)
    (row,) = _rows(frame, _claim(0.02)).values()
    assert (row["unit"], row["n_units"], row["n_pairs"]) == ("partition", 4, 12)
    mom, ce = (
        frame.filter(pl.col("method") == m).sort("partition", "seed")[METRIC].to_numpy().reshape(4, 3) for m in ("mom", "ce")
    )
    means = (mom - ce).mean(axis=1)
    assert row["delta"] == pytest.approx(means.mean())
    half = row["ci_high"] - row["delta"]
    from scipy import stats

    level = 1 - row["ci_level"]
    assert half == pytest.approx(stats.t.isf(level / 2, 3) * means.std(ddof=1) / 2)


def test_a_sequential_design_counts_units_and_stops_at_the_look_that_decides():
    sequential = Sequential(max_seeds=9, look_every=3, spending="pocock")
    assert claim_looks(sequential) == (3, 6, 9)
    frame = _frame({"ce": 0.0, "mom": 0.05}, seeds=2, partitions=9, noise=0.002)
    (row,) = _rows(frame, _claim(0.04), sequential=sequential).values()
    assert row["design"] == "sequential (pocock, looks at [3, 6, 9] partitions)"
    assert (row["decided_look"], row["n_units"], row["n_pairs"]) == (0, 3, 6) and row["verdict"] == "reproduced"
    undecided = _frame({"ce": 0.0, "mom": 0.0}, seeds=9, noise=0.01)
    (row,) = _rows(undecided, _claim(0.005), sequential=sequential).values()
    assert row["decided_look"] is None and row["looks_taken"] == 3 and row["n_units"] == 9 and row["unit"] == "seed"


def test_units_needed_and_power_come_from_the_observed_sd():
    from nerplat.analysis.sequential import design_power, units_for_power

    frame = _frame({"ce": 0.0, "focal": 0.0, "mom": 0.004}, noise=0.004)
    rows = _rows(
        frame, _claim(0.004), _claim(claim_id="direction", direction="better"), sequential=Sequential(max_seeds=6, look_every=3)
    )
    d = (
        frame.filter(pl.col("method") == "mom").sort("seed")[METRIC] - frame.filter(pl.col("method") == "ce").sort("seed")[METRIC]
    ).to_numpy()
    sd, alpha = d.std(ddof=1), 0.05 / 2
    assert rows["mom_vs_ce"]["units_needed"] == units_for_power(0.004, sd, alpha)
    assert rows["mom_vs_ce"]["power"] == pytest.approx(design_power(0.004, sd, 6, alpha))
    assert rows["direction"]["units_needed"] == units_for_power(d.mean(), sd, alpha) and rows["direction"]["power"] is None
    assert (rows["mom_vs_ce"]["units_needed_at"], rows["direction"]["units_needed_at"]) == (
        "paper's effect", "observed difference"
    )
    assert verdict_text(rows["direction"]).power.endswith(
        f"{rows['direction']['units_needed']} for 0.8 at the observed difference"
    )
    (row,) = _rows(frame, _claim(claim_id="on_par", kind="equivalent", margin=0.01)).values()
    assert row["units_needed_at"] == "margin"


def test_a_difference_of_about_zero_says_it_needs_more_than_max_pairs_units():
    import numpy as np

    from nerplat.analysis.verdicts import _power

    direction = _claim(claim_id="direction", direction="better")
    row = _power(direction, np.array([0.01, -0.01, 0.01, -0.01]), 9, 0.05)
    assert row["units_needed"] is None and row["units_needed_at"] == "observed difference"
    assert _power(direction, np.array([0.01]), 9, 0.05)["units_needed_at"] is None  # no sd: nothing to say
    frame = _frame({"ce": 0.0, "mom": 0.004}, noise=0.004)
    (full,) = _rows(frame, direction).values()
    assert verdict_text(full | row).power.endswith("more than 100,000 for 0.8 at the observed difference")


def test_best_other_is_the_partner_with_the_best_dev_score():
    frame = _frame({"ce": 0.0, "focal": 0.05, "mom": 0.03}, dev={"ce": 0.0, "focal": 0.01, "mom": 0.0})
    (row,) = _rows(frame, _claim(0.0016, partner="best_other")).values()
    assert row["partner"] == "focal" and row["delta"] == pytest.approx(-0.02, abs=0.01)
    assert row["direction_verdict"] == "opposite" and row["partner_chosen_at"] == "all units"
    assert sorted(row["arms"]) == sorted(frame.filter(pl.col("method").is_in(["mom", "focal"]))["arm"].unique().to_list())


def test_best_other_is_chosen_at_the_first_look_and_kept():
    """focal leads on dev in the first look's 3 seeds, ce over all 9: the sequential design keeps focal."""
    frame = _frame({"ce": 0.0, "focal": 0.0, "mom": 0.03}, seeds=9)
    dev = pl.when(pl.col("method") == "focal").then(pl.when(pl.col("seed") < 3).then(0.8).otherwise(0.6)).otherwise(
        pl.when(pl.col("method") == "ce").then(0.75).otherwise(0.7))
    frame = frame.with_columns(dev.alias("dev_best_macro_f1"))
    sequential = Sequential(max_seeds=9, look_every=3, spending="pocock")
    (row,) = _rows(frame, _claim(0.02, partner="best_other"), sequential=sequential).values()
    assert row["partner"] == "focal" and row["partner_chosen_at"] == "first look"
    (row,) = _rows(frame, _claim(0.02, partner="best_other")).values()
    assert row["partner"] == "ce"


def test_tuning_effort_and_cost_come_from_the_plan_and_the_runs():
    frame = _frame({"ce": 0.0, "mom": 0.03}).with_columns(pl.lit(100.0).alias("trial_seconds"))
    arms = {a: a.rsplit("/", 1)[1] for a in frame["arm"].unique().to_list()}
    plan = {"arms": [
        {"id": arm, "tune_trials": 8 if method == "mom" else 0,
         "search_space": {"objective.lambda": {}} if method == "mom" else {}, "fixed": {"train": {"epochs": 10}},
         "resources": {"workers": 1, "cpus_per_worker": 2.0, "gpus_per_worker": 0.0}}
        for arm, method in arms.items()
    ]}
    trials = frame.filter(pl.col("method") == "mom").select("arm", pl.lit(50.0).alias("time_train_s"))
    (row,) = verdicts(frame, _settings(_claim(0.02)), arms=arm_frame(plan), trials=trials, aso=False).iter_rows(named=True)
    assert (row["method_trials"], row["method_searched"], row["method_epochs"]) == (8, "objective.lambda", 10)
    assert (row["partner_trials"], row["partner_searched"], row["partner_epochs"]) == (0, "", 10)
    # 12 replicates of 100 s and 6 trials of 50 s, on 2 CPUs each
    assert row["cpu_hours"] == pytest.approx((12 * 100 + 6 * 50) * 2 / 3600) and row["gpu_hours"] == 0


def test_aso_is_reported_both_ways_and_claims_without_runs_give_no_rows():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    (row,) = verdicts(frame, _settings(_claim(0.02))).iter_rows(named=True)
    assert 0 <= row["aso_eps_min"] < 0.5 < row["aso_eps_min_reverse"] <= 1
    claim = Claim(**(_claim(0.02).model_dump() | {"where": {"dataset": "wnut17"}}))
    empty = verdicts(frame, _settings(claim))
    assert empty.is_empty() and tuple(empty.columns) == VERDICT_COLUMNS


def test_a_claim_of_direction_only_is_reproduced_above_zero_and_opposite_below():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    better = _claim(claim_id="better", direction="better", comparable="the paper's setting")
    worse = _claim(claim_id="worse", direction="worse")
    rows = _rows(frame, better, worse)
    assert rows["better"]["verdict"] == "reproduced"
    assert rows["better"]["paper_effect"] is None and rows["better"]["p_vs_paper"] is None
    assert rows["better"]["magnitude_verdict"] == "not comparable"  # no number to compare with
    assert rows["worse"]["verdict"] == "opposite" and rows["worse"]["direction"] == "worse"


def test_a_claim_in_a_setting_the_paper_never_ran_extends_or_does_not_never_opposite():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    beyond = "the paper ran full data only"
    rows = _rows(frame, _claim(claim_id="holds", direction="better", extrapolation=beyond),
                 _claim(claim_id="fails", direction="worse", extrapolation=beyond))
    assert rows["holds"]["verdict"] == "extends" and rows["fails"]["verdict"] == "does not extend"
    assert rows["fails"]["extrapolation"] == beyond and rows["fails"]["magnitude_verdict"] == "not comparable"
    assert "extrapolation" in verdict_text(rows["fails"]).where
    (ran,) = _rows(frame, _claim(claim_id="ran", direction="worse")).values()
    assert ran["verdict"] == "opposite" and ran["extrapolation"] is None
    with pytest.raises(ValueError, match="extrapolation .* or comparable"):
        _claim(direction="better", extrapolation=beyond, comparable="the paper's setting")


def test_a_claim_across_sampler_settings_pairs_one_method_by_seed():
    frame = synthetic_replicates(methods=("ce",), sizes=(100, 200), seeds=5, types=()).with_columns(
        pl.lit(True).alias("converged_run")
    )
    frame = frame.with_columns(
        pl.when(pl.col("size") == 200).then(0.75).otherwise(0.70).add(pl.col("seed") * 0.001).alias(METRIC)
    )
    claim = Claim(id="resampled", paper="Wang & Wang 2022", source="Table 3", method="ce", partner="ce",
                  partner_sampler="low_resource-100", where={"sampler": "low_resource-200"}, metric="macro_f1", effect=0.0693)
    (row,) = verdicts(frame, _settings(claim), aso=False).iter_rows(named=True)
    assert row["n_pairs"] == 5 and row["delta"] == pytest.approx(0.05) and row["converged"] is True
    assert len(row["arms"]) == 2 and row["sampler"].startswith("low_resource(size=200")


def test_the_table_shows_both_verdicts_and_reads_a_report_older_than_them():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    new = verdicts(frame, _settings(_claim(0.02, comparable="same data")), aso=False)
    text = verdict_text(new.row(0, named=True))
    assert (text.direction, text.units) == ("reproduced", "6 seeds")
    assert text.magnitude.split(" (")[0] in {"consistent", "larger", "inconclusive"}
    old = new.select("claim", "paper", "method", "partner", "dataset", "sampler", "size", "paper_effect", "direction", "delta",
                     "ci_low", "ci_high", "p_holm", "n_pairs", "converged", "verdict", "decided_look", "method_trials",
                     "partner_trials", "method_searched", "partner_searched", "method_epochs", "partner_epochs")
    old_text = verdict_text(old.row(0, named=True))
    assert (old_text.direction, old_text.magnitude, old_text.power, old_text.units) == (
        OLD_REPORT, OLD_REPORT, OLD_REPORT, "6 pairs"
    )
    for table in (verdicts_table(new), verdicts_table(old)):
        names = [c.name for c in table.columns]
        assert {"Direction", "Magnitude", "Verdict", "Units", "Metric"} <= set(names) and "p (Holm)" not in names
        assert names[0] == "Verdict"  # early: visible without scrolling
    assert (text.p, text.metric) == (f"{p_text(new['p_holm'][0])} (Holm)", "macro_f1")
    assert "ep" in verdicts_table(new).rows[0].cells[-1].text


def test_the_table_says_whether_a_verdict_is_confirmatory_and_why_not():
    """A report reads its evidence beside the verdict: exploratory with evidence.py's reason, or
    confirmatory; a verdicts.parquet from before the evidence columns says it is old."""
    frame = verdicts(_frame({"ce": 0.0, "mom": 0.03}), _settings(_claim(0.02)), aso=False)
    exploratory = frame.with_columns(pl.lit("exploratory").alias("evidence"), pl.lit("no registration").alias("evidence_reason"))
    confirmatory = frame.with_columns(pl.lit("confirmatory").alias("evidence"), pl.lit(None).alias("evidence_reason"))
    old = frame.drop("evidence", "evidence_reason")
    shown_for = ((exploratory, "exploratory (no registration)"), (confirmatory, "confirmatory"), (old, OLD_REPORT))
    for verdict_rows, shown in shown_for:
        table = verdicts_table(verdict_rows)
        column = [c.name for c in table.columns].index("Evidence")
        assert column == 1 and table.rows[0].cells[column].text == shown


def test_the_test_against_the_paper_counts_its_standard_error_and_needs_one():
    """Welch-type: (delta - effect) over sqrt(se_ours^2 + paper_se^2) on our n - 1 degrees of freedom
    (the paper's run count is not given); a single-run effect has no error to test against."""
    from scipy import stats

    frame = _frame({"ce": 0.0, "mom": 0.03}, noise=0.002)
    rows = _rows(frame, _claim(0.02, claim_id="with_se", paper_se=0.004), _claim(0.02, claim_id="single_run"))
    d = (
        frame.filter(pl.col("method") == "mom").sort("seed")[METRIC] - frame.filter(pl.col("method") == "ce").sort("seed")[METRIC]
    ).to_numpy()
    t = (d.mean() - 0.02) / np.hypot(d.std(ddof=1) / np.sqrt(d.size), 0.004)
    assert rows["with_se"]["p_vs_paper"] == pytest.approx(2 * stats.t.sf(abs(t), d.size - 1))
    assert rows["single_run"]["p_vs_paper"] is None


def test_the_paper_cell_names_the_citation_once_then_the_source():
    assert paper_and_source("Nguyen et al. 2023a, Table 2", "Table 2, size 100") == "Nguyen et al. 2023a, Table 2, size 100"
    assert paper_and_source("Wang & Wang 2022", "Table 3") == "Wang & Wang 2022, Table 3"
    assert paper_and_source("Nemoto et al. 2024, Fig. 2", None) == "Nemoto et al. 2024, Fig. 2"  # older report: no source
    assert paper_and_source("a preprint", "sec. 4") == "a preprint, sec. 4"  # no year to cut at


def test_a_sequential_row_gives_its_stagewise_p_t_boundary_and_margin():
    from nerplat.analysis.boundaries import boundaries, stagewise_p

    sequential = Sequential(max_seeds=9, look_every=3, spending="pocock")
    frame = _frame({"ce": 0.0, "mom": 0.05}, seeds=2, partitions=9, noise=0.002)
    (row,) = _rows(frame, _claim(0.04), sequential=sequential).values()
    design = boundaries((3, 6, 9), 9, 0.05, "pocock")
    assert row["boundary_t"] == pytest.approx(design.critical_t[0])
    assert row["boundary_margin"] == pytest.approx(abs(row["t_stat"]) - row["boundary_t"]) and row["boundary_margin"] > 0
    assert row["p_stagewise"] == pytest.approx(stagewise_p(design, 0, row["t_stat"])) and row["p_stagewise"] <= 0.05
    assert row["t_stat"] == pytest.approx(row["delta"] / ((row["ci_high"] - row["delta"]) / row["boundary_t"]))
    midway = _frame({"ce": 0.0, "mom": 0.0}, seeds=6, noise=0.01)  # undecided with looks to come: not stopped
    (row,) = _rows(midway, _claim(0.005), sequential=sequential).values()
    assert row["decided_look"] is None and row["p_stagewise"] is None and row["boundary_margin"] is None
    last = _frame({"ce": 0.0, "mom": 0.0}, seeds=9, noise=0.01)  # undecided at its last look: stopped, p above alpha
    (row,) = _rows(last, _claim(0.005), sequential=sequential).values()
    assert row["looks_taken"] == 3 and row["p_stagewise"] > 0.05


def test_a_fixed_row_gives_no_stagewise_p_and_an_equivalent_one_its_margin_to_the_band():
    frame = _frame({"ce": 0.0, "mom": 0.001, "focal": 0.05}, noise=0.002)
    on_par = _claim(claim_id="on_par", kind="equivalent", margin=0.01)
    apart = Claim(id="apart", paper="x", source="sec. V", kind="equivalent", margin=0.01, method="focal", partner="ce",
                  metric="macro_f1")
    rows = _rows(frame, on_par, apart, _claim(0.02, claim_id="plain"))
    assert all(r["p_stagewise"] is None for r in rows.values())
    row = rows["on_par"]
    se = (row["ci_high"] - row["delta"]) / row["boundary_t"]
    assert row["boundary_margin"] == pytest.approx(min(0.01 - row["delta"], row["delta"] + 0.01) / se - row["boundary_t"])
    row = rows["apart"]
    se = (row["ci_high"] - row["delta"]) / row["boundary_t"]
    assert row["boundary_margin"] == pytest.approx((row["delta"] - 0.01) / se - row["boundary_t"]) and row["boundary_margin"] >= 0


def test_the_paper_s_effect_outside_the_interval_is_read_where_magnitudes_are_not_comparable():
    """ce2t_collapses_100: an interval about zero excludes the paper's -0.495 many times over."""
    frame = _frame({"ce": 0.0, "mom": 0.0}, noise=0.01)
    claims = (_claim(-0.495, claim_id="far"), _claim(0.001, claim_id="near"), _claim(claim_id="none", direction="better"))
    rows = _rows(frame, *claims)
    assert rows["far"]["verdict"] == "inconclusive" and rows["far"]["magnitude_verdict"] == "not comparable"
    assert rows["far"]["paper_in_interval"] is False and rows["near"]["paper_in_interval"] is True
    assert rows["none"]["paper_in_interval"] is None
    assert "paper's effect outside our interval" in verdict_text(rows["far"]).magnitude
    assert "outside" not in verdict_text(rows["near"]).magnitude


def test_epochs_trained_are_the_mean_stopped_epoch_of_each_side_s_replicates():
    frame = _frame({"ce": 0.0, "mom": 0.03})
    frame = frame.with_columns(pl.when(pl.col("method") == "mom").then(12).otherwise(pl.col("seed") + 20).alias("stopped_epoch"))
    (row,) = _rows(frame, _claim(0.02)).values()
    assert row["method_epochs_trained"] == 12.0 and row["partner_epochs_trained"] == pytest.approx(22.5)
    (row,) = _rows(frame.drop("stopped_epoch"), _claim(0.02)).values()
    assert row["method_epochs_trained"] is None


def test_every_unit_and_its_difference_is_kept_in_unit_order_for_the_claims_table():
    sequential = Sequential(max_seeds=9, look_every=3, spending="pocock")
    frame = _frame({"ce": 0.0, "mom": 0.05}, seeds=2, partitions=9, noise=0.002)
    (row,) = _rows(frame, _claim(0.04), sequential=sequential).values()
    assert row["n_units"] == 3 and row["unit_keys"] == list(range(9))  # decided at 3 units, all 9 kept
    mom, ce = (
        frame.filter(pl.col("method") == m).sort("partition", "seed")[METRIC].to_numpy().reshape(9, 2) for m in ("mom", "ce")
    )
    assert row["unit_differences"] == pytest.approx((mom - ce).mean(axis=1).tolist())
