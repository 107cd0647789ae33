"""Convergence verdicts: from selected epochs and per-epoch dev curves, per cell."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from nerplat.analysis.aggregate import metric_columns, summarise
from nerplat.analysis.convergence import convergence, dev_curves, read_curve, unconverged_cells, with_convergence
from nerplat.analysis.run_frames import EPOCH_SCHEMA
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates

METRIC = "dev_micro_f1"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _runs(selected: dict[str, list[int]]) -> pl.DataFrame:
    """Three seeds of ce and mom, with the given selected epoch per seed."""
    frame = synthetic_replicates(methods=("ce", "mom"), sizes=(20,), seeds=3, types=())
    epochs = [selected[r["method"]][r["seed"]] for r in frame.iter_rows(named=True)]
    return frame.with_columns(pl.Series("selected_epoch", epochs, dtype=pl.Float64))


def _curves(frame: pl.DataFrame, curve: dict[str, list[float]]) -> pl.DataFrame:
    """Every run of a method follows its method's curve (epochs 1..len), offset by its seed."""
    rows = [
        (r["run_id"], METRIC, epoch, value + 0.001 * r["seed"])
        for r in frame.iter_rows(named=True)
        for epoch, value in enumerate(curve[r["method"]], start=1)
    ]
    return pl.DataFrame(rows, schema=EPOCH_SCHEMA, orient="row")


RISING = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
PLATEAU = [0.2, 0.5, 0.7, 0.8, 0.81, 0.80, 0.805, 0.80]


def test_a_rising_curve_is_not_converged_and_a_plateau_is():
    frame = _runs({"ce": [8, 8, 8], "mom": [5, 7, 3]})
    verdicts = convergence(frame, _curves(frame, {"ce": RISING, "mom": PLATEAU}), METRIC)
    by_method = {r["method"]: r for r in verdicts.iter_rows(named=True)}
    assert by_method["ce"]["curve"] == "rising" and by_method["ce"]["converged"] is False
    assert by_method["ce"]["slope"] == pytest.approx(0.1)  # per epoch, over the last 4 of 8 evaluations
    assert by_method["ce"]["last_epoch_share"] == 1.0 and by_method["ce"]["last_epoch"] == 8
    assert by_method["mom"]["curve"] == "flat" and by_method["mom"]["converged"] is True


def test_the_slope_is_read_against_the_curves_own_noise():
    noisy_plateau = [0.1, 0.4, 0.6, 0.70, 0.72, 0.74, 0.724, 0.745, 0.739, 0.740]  # a rise of 0.016, wobble 0.01
    steady = [0.1, 0.4, 0.6, 0.70, 0.70, 0.702, 0.704, 0.706, 0.708, 0.710]  # 0.002 a epoch, no wobble
    assert read_curve(range(1, 11), noisy_plateau).curve == "flat"
    rising = read_curve(range(1, 11), steady)
    assert rising.curve == "rising" and rising.slope == pytest.approx(0.002)
    tiny = [0.1, 0.4, 0.6, 0.7, 0.7, 0.7002, 0.7004, 0.7006, 0.7008, 0.7010]  # steady but below MIN_SLOPE
    assert read_curve(range(1, 11), tiny).curve == "flat"


def test_a_curve_that_never_leaves_its_start_is_degenerate_and_never_converged():
    frame = _runs({"ce": [1, 1, 1], "mom": [5, 7, 3]})
    verdicts = convergence(frame, _curves(frame, {"ce": [0.0] * 8, "mom": PLATEAU}), METRIC)
    ce = verdicts.filter(pl.col("method") == "ce").row(0, named=True)
    assert ce["curve"] == "degenerate" and ce["converged"] is False
    summary = with_convergence(summarise(frame, ["test_micro_f1"], AnalysisSettings(bootstrap_resamples=100)), verdicts)
    (line,) = unconverged_cells(summary)
    assert line.startswith("not converged: ce") and "learned nothing" in line


def _committed(report: str, method: str) -> tuple[list[int], list[float]]:
    """Mean dev curves copied from committed reports' dev-curve tables at commit 1dad679
    (tests/fixtures/dev_curves.csv): mom_conll (cpu profile, fp32), and the MiniLM softmax on the
    original WNUT-17 10% in the resampling report (fp32) and its cpu-grid rerun (bf16)."""
    curves = pl.read_csv(FIXTURES / "dev_curves.csv").filter(pl.col("report") == report, pl.col("method") == method).sort("epoch")
    return curves["epoch"].to_list(), curves["mean"].to_list()


def test_the_rule_on_the_repositorys_own_curves():
    """mom_conll's MoM (flat since epoch 8 within its noise) is converged like CE with the same shape,
    dice at F1 0 is degenerate, WCE-1 and focal still rise; the resampling MiniLM softmax gets one label
    in fp32 and in bf16 (the late-gain rule gave it opposite ones)."""
    verdict = {m: read_curve(*_committed("mom_conll", m)).curve for m in ("ce", "mom", "dice", "wce1", "wce2", "focal")}
    assert verdict == {"ce": "flat", "mom": "flat", "dice": "degenerate", "wce1": "rising", "wce2": "flat", "focal": "rising"}
    fp32 = read_curve(*_committed("resampling", "softmax"))
    bf16 = read_curve(*_committed("resampling-cpu-grid", "softmax"))
    assert fp32.curve == bf16.curve


def test_one_evaluation_cannot_show_a_plateau_and_no_curve_is_unknown():
    frame = _runs({"ce": [1, 1, 1], "mom": [1, 1, 1]})
    one = convergence(frame, _curves(frame, {"ce": [0.5], "mom": [0.5]}), METRIC)
    assert one["converged"].to_list() == [False, False]
    none = convergence(frame, pl.DataFrame(schema=EPOCH_SCHEMA), METRIC)
    settings = AnalysisSettings(bootstrap_resamples=100)
    summary = with_convergence(summarise(frame, metric_columns(frame), settings), none)
    assert summary["converged"].null_count() == summary.height
    assert unconverged_cells(summary) == []


def test_a_fit_outside_the_epoch_loop_is_judged_by_its_own_stopping_test():
    """crfsuite: one evaluation, but `fit_converged` says whether L-BFGS met its test (mom: one seed cut)."""
    frame = _runs({"ce": [1, 1, 1], "mom": [1, 1, 1]}).with_columns(
        pl.when((pl.col("method") == "mom") & (pl.col("seed") == 2)).then(0.0).otherwise(1.0).alias("fit_converged")
    )
    verdicts = convergence(frame, _curves(frame, {"ce": [0.5], "mom": [0.5]}), METRIC)
    assert dict(zip(verdicts["method"], verdicts["converged"])) == {"ce": True, "mom": False}
    assert verdicts["last_epoch_share"].null_count() == verdicts["slope"].null_count() == 2
    summary = with_convergence(summarise(frame, ["test_micro_f1"], AnalysisSettings(bootstrap_resamples=100)), verdicts)
    (line,) = unconverged_cells(summary)
    assert line.startswith("not converged: mom") and "raise the head's max_iterations" in line


def test_the_summary_carries_the_verdict_and_the_runner_gets_one_line_per_unconverged_cell():
    frame = _runs({"ce": [8, 8, 8], "mom": [5, 7, 3]})
    verdicts = convergence(frame, _curves(frame, {"ce": RISING, "mom": PLATEAU}), METRIC)
    summary = with_convergence(summarise(frame, ["test_micro_f1", "test_micro_recall"], AnalysisSettings(bootstrap_resamples=100)), verdicts)
    assert dict(zip(summary["method"], summary["converged"])) == {"ce": False, "mom": True}
    (line,) = unconverged_cells(summary)
    assert line.startswith("not converged: ce on conll2003") and "rising (slope +0.1000/epoch" in line
    assert unconverged_cells(summary, methods=["mom"]) == []


def test_dev_curves_are_the_mean_over_replicates_per_epoch():
    frame = _runs({"ce": [8, 8, 8], "mom": [5, 7, 3]})
    curves = dev_curves(frame, _curves(frame, {"ce": RISING, "mom": PLATEAU}), METRIC)
    ce = curves.filter(pl.col("method") == "ce").sort("epoch")
    assert ce["n"].to_list() == [3] * 8
    assert ce["mean"].to_list() == pytest.approx([v + 0.001 for v in RISING])
