"""Convergence verdicts per cell, from why each replicate stopped (`converged_run`)."""

from __future__ import annotations

import polars as pl
import pytest

from nerplat.analysis.aggregate import metric_columns, summarise
from nerplat.analysis.convergence import VERDICT_COLUMNS, convergence, dev_curves, unconverged_cells, with_convergence
from nerplat.analysis.run_frames import EPOCH_SCHEMA
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates

METRIC = "dev_micro_f1"
SETTINGS = AnalysisSettings(bootstrap_resamples=100)


def _runs(stopped: dict[str, list[tuple[str | None, int | None]]], selected: dict[str, list[int]] | None = None) -> pl.DataFrame:
    """Three seeds of ce and mom, each stopped as given per seed: (stopped_by, stopped_epoch)."""
    frame = synthetic_replicates(methods=("ce", "mom"), sizes=(20,), seeds=3, types=())
    rows = [stopped[r["method"]][r["seed"]] for r in frame.iter_rows(named=True)]
    frame = frame.with_columns(
        pl.Series("stopped_by", [why for why, _ in rows], dtype=pl.String),
        pl.Series("stopped_epoch", [epoch for _, epoch in rows], dtype=pl.Float64),  # as MLflow metrics arrive
    )
    if selected is not None:
        epochs = [selected[r["method"]][r["seed"]] for r in frame.iter_rows(named=True)]
        frame = frame.with_columns(pl.Series("selected_epoch", epochs, dtype=pl.Float64))
    return frame


def _curves(frame: pl.DataFrame) -> pl.DataFrame:
    """Every run's dev curve: epochs 1..stopped_epoch at a constant score."""
    rows = [
        (r["run_id"], METRIC, epoch, 0.5)
        for r in frame.iter_rows(named=True)
        for epoch in range(1, int(r["stopped_epoch"] or 0) + 1)
    ]
    return pl.DataFrame(rows, schema=EPOCH_SCHEMA, orient="row")


PLATEAU = [("patience", 9), ("patience", 11), ("patience", 10)]
CAPPED = [("patience", 12), ("cap", 20), ("patience", 14)]


def test_a_cell_is_converged_when_every_run_stopped_by_patience_and_not_when_one_hit_the_cap():
    frame = _runs({"ce": CAPPED, "mom": PLATEAU}, selected={"ce": [8, 20, 7], "mom": [6, 8, 10]})
    verdicts = convergence(frame, _curves(frame), METRIC)
    assert verdicts.columns[-len(VERDICT_COLUMNS):] == list(VERDICT_COLUMNS)
    ce, mom = (verdicts.filter(pl.col("method") == m).row(0, named=True) for m in ("ce", "mom"))
    assert (ce["converged"], ce["runs"], ce["stopped_by_patience"], ce["cap"]) == (False, 3, 2, 20)
    assert ce["mean_stopped_epoch"] == pytest.approx(46 / 3) and ce["last_epoch_share"] == pytest.approx(1 / 3)
    assert (mom["converged"], mom["stopped_by_patience"], mom["cap"], mom["judged_by"]) == (True, 3, None, "patience")


def test_the_verdict_reads_no_curve_a_rising_mean_curve_stopped_by_patience_is_converged():
    """The slope test flagged such cells (CE at 50 sentences, best epochs 7-8 of 20) as rising: the rule no longer reads
    the curve."""
    frame = _runs({"ce": PLATEAU, "mom": PLATEAU})
    rising = pl.DataFrame(
        [(r["run_id"], METRIC, e, 0.1 * e) for r in frame.iter_rows(named=True) for e in range(1, 12)],
        schema=EPOCH_SCHEMA,
        orient="row",
    )
    assert convergence(frame, rising, METRIC)["converged"].to_list() == [True, True]
    assert convergence(frame, pl.DataFrame(schema=EPOCH_SCHEMA), METRIC)["converged"].to_list() == [True, True]


def test_a_run_that_does_not_say_why_it_stopped_leaves_its_cell_unknown_unless_another_hit_the_cap():
    frame = _runs({"ce": [("patience", 9), (None, None), ("patience", 9)], "mom": [("cap", 20), (None, None), ("patience", 9)]})
    verdicts = convergence(frame, _curves(frame), METRIC)
    assert dict(zip(verdicts["method"], verdicts["converged"])) == {"ce": None, "mom": False}
    old = synthetic_replicates(methods=("ce",), sizes=(20,), seeds=2, types=())  # a runs.parquet older than the columns
    assert convergence(old, pl.DataFrame(schema=EPOCH_SCHEMA), METRIC)["converged"].to_list() == [None]
    assert convergence(old, pl.DataFrame(schema=EPOCH_SCHEMA), METRIC)["judged_by"].to_list() == [None]  # nothing recorded
    assert set(verdicts["judged_by"]) == {"patience"}
    summary = with_convergence(
        summarise(old, metric_columns(old), SETTINGS), convergence(old, pl.DataFrame(schema=EPOCH_SCHEMA), METRIC)
    )
    assert summary["converged"].null_count() == summary.height and unconverged_cells(summary) == []


def test_a_fit_outside_the_epoch_loop_is_judged_by_its_own_stopping_test():
    """crfsuite: its one fit is the cap (stopped_by cap), but `fit_converged` says whether L-BFGS met its test."""
    fits = [("cap", 1)] * 3
    frame = _runs({"ce": fits, "mom": fits}).with_columns(
        pl.when((pl.col("method") == "mom") & (pl.col("seed") == 2)).then(0.0).otherwise(1.0).alias("fit_converged")
    )
    verdicts = convergence(frame, _curves(frame), METRIC)
    assert dict(zip(verdicts["method"], verdicts["converged"])) == {"ce": True, "mom": False}
    assert verdicts["judged_by"].to_list() == ["fit", "fit"] and verdicts["last_epoch_share"].null_count() == 2
    summary = with_convergence(summarise(frame, ["test_micro_f1"], SETTINGS), verdicts)
    (line,) = unconverged_cells(summary)
    assert line.startswith("not converged: mom") and "raise the head's max_iterations" in line


def test_the_summary_carries_the_verdict_and_the_runner_gets_one_line_per_cell_that_hit_the_cap():
    frame = _runs({"ce": CAPPED, "mom": PLATEAU})
    verdicts = convergence(frame, _curves(frame), METRIC)
    summary = with_convergence(summarise(frame, ["test_micro_f1", "test_micro_recall"], SETTINGS), verdicts)
    assert dict(zip(summary["method"], summary["converged"])) == {"ce": False, "mom": True}
    (line,) = unconverged_cells(summary)
    assert line.startswith("not converged: ce on conll2003") and "1 of 3 runs hit the cap (train.epochs 20)" in line
    assert "raise train.epochs" in line and "set train.early_stopping" in line
    assert unconverged_cells(summary, methods=["mom"]) == []


def test_dev_curves_are_the_mean_over_replicates_per_epoch():
    frame = _runs({"ce": PLATEAU, "mom": PLATEAU})
    curves = dev_curves(frame, _curves(frame), METRIC)
    ce = curves.filter(pl.col("method") == "ce").sort("epoch")
    assert ce["n"].to_list() == [3] * 9 + [2] + [1]  # the runs stopped at epochs 9, 11 and 10
    assert ce["mean"].to_list() == pytest.approx([0.5] * 11)
