"""Convergence verdicts: from selected epochs and per-epoch dev curves, per cell."""

from __future__ import annotations

import polars as pl
import pytest

from nerplat.analysis.aggregate import metric_columns, summarise
from nerplat.analysis.convergence import convergence, dev_curves, unconverged_cells, with_convergence
from nerplat.analysis.runs import EPOCH_SCHEMA
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates

METRIC = "dev_micro_f1"


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


def test_a_rising_curve_whose_replicates_pick_the_last_epoch_did_not_converge():
    frame = _runs({"ce": [8, 8, 8], "mom": [5, 7, 3]})
    verdicts = convergence(frame, _curves(frame, {"ce": RISING, "mom": PLATEAU}), METRIC)
    by_method = {r["method"]: r for r in verdicts.iter_rows(named=True)}
    assert by_method["ce"]["last_epoch_share"] == 1.0 and by_method["ce"]["converged"] is False
    assert by_method["ce"]["late_gain"] == pytest.approx(0.9 - 0.7)  # last minus best up to epoch 6
    assert by_method["mom"]["last_epoch_share"] == 0.0 and by_method["mom"]["converged"] is True
    assert by_method["ce"]["last_epoch"] == 8


def test_a_curve_still_rising_fails_even_when_few_replicates_pick_the_last_epoch():
    frame = _runs({"ce": [7, 8, 6], "mom": [5, 7, 3]})
    verdicts = convergence(frame, _curves(frame, {"ce": RISING, "mom": PLATEAU}), METRIC)
    ce = verdicts.filter(pl.col("method") == "ce").row(0, named=True)
    assert ce["last_epoch_share"] == pytest.approx(1 / 3) and ce["converged"] is False


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
    assert verdicts["last_epoch_share"].null_count() == verdicts["late_gain"].null_count() == 2
    summary = with_convergence(summarise(frame, ["test_micro_f1"], AnalysisSettings(bootstrap_resamples=100)), verdicts)
    (line,) = unconverged_cells(summary)
    assert line.startswith("not converged: mom") and "raise the head's max_iterations" in line


def test_the_summary_carries_the_verdict_and_the_runner_gets_one_line_per_unconverged_cell():
    frame = _runs({"ce": [8, 8, 8], "mom": [5, 7, 3]})
    verdicts = convergence(frame, _curves(frame, {"ce": RISING, "mom": PLATEAU}), METRIC)
    summary = with_convergence(summarise(frame, ["test_micro_f1", "test_micro_recall"], AnalysisSettings(bootstrap_resamples=100)), verdicts)
    assert dict(zip(summary["method"], summary["converged"])) == {"ce": False, "mom": True}
    (line,) = unconverged_cells(summary)
    assert line.startswith("not converged: ce on conll2003") and "100% of replicates selected the last epoch (8)" in line
    assert unconverged_cells(summary, methods=["mom"]) == []


def test_dev_curves_are_the_mean_over_replicates_per_epoch():
    frame = _runs({"ce": [8, 8, 8], "mom": [5, 7, 3]})
    curves = dev_curves(frame, _curves(frame, {"ce": RISING, "mom": PLATEAU}), METRIC)
    ce = curves.filter(pl.col("method") == "ce").sort("epoch")
    assert ce["n"].to_list() == [3] * 8
    assert ce["mean"].to_list() == pytest.approx([v + 0.001 for v in RISING])
